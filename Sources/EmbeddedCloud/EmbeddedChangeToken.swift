import Foundation
import GatewayCore

/// The embedded cloud's change token: a zone generation and a commit sequence number.
///
/// Layout: one version byte, 16 generation bytes, 8 bytes of sequence (little-endian).
struct EmbeddedChangeToken: Equatable {
    static let version: UInt8 = 1
    static let encodedSize = 25

    var generation: Data
    var sequence: Int64

    init(generation: Data, sequence: Int64) {
        self.generation = generation
        self.sequence = sequence
    }

    init(_ token: ChangeToken) throws(CloudError) {
        let bytes = [UInt8](token.data)
        guard bytes.count == Self.encodedSize, bytes[0] == Self.version else {
            throw CloudError(.invalidArguments, "the change token was not issued by this cloud; reset the adapter's sync state")
        }
        generation = Data(bytes[1..<17])
        sequence = bytes[17..<25].withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
    }

    var changeToken: ChangeToken {
        var bytes = [Self.version]
        bytes.append(contentsOf: generation)
        withUnsafeBytes(of: sequence.littleEndian) { bytes.append(contentsOf: $0) }
        return ChangeToken(data: Data(bytes))
    }
}
