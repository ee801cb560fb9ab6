import Foundation
import GatewayCore

/// The embedded cloud's change token: a zone generation, a commit sequence number, and the purge
/// horizon when the chain of fetches that produced it began.
///
/// The horizon lets a fetch that started from scratch page past sequence numbers whose
/// tombstones were purged before it began (it never needed them), while a token of a client that
/// fell behind a later purge still expires.
///
/// Layout: one version byte, 16 generation bytes, 8 bytes of sequence and 8 bytes of horizon
/// (little-endian).
struct EmbeddedChangeToken: Equatable {
    static let version: UInt8 = 2
    static let encodedSize = 33

    var generation: Data
    var sequence: Int64
    /// The zone's purged sequence when the fetch chain began from no token (0 otherwise).
    var horizon: Int64

    init(generation: Data, sequence: Int64, horizon: Int64) {
        self.generation = generation
        self.sequence = sequence
        self.horizon = horizon
    }

    init(_ token: ChangeToken) throws(CloudError) {
        let bytes = [UInt8](token.data)
        guard bytes.count == Self.encodedSize, bytes[0] == Self.version else {
            throw CloudError(.invalidArguments, "the change token was not issued by this cloud; reset the adapter's sync state")
        }
        generation = Data(bytes[1..<17])
        sequence = bytes[17..<25].withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
        horizon = bytes[25..<33].withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
    }

    /// Whether the tombstones this token still needs are all kept.
    func isCovered(byPurgedSequence purged: Int64) -> Bool {
        purged <= max(sequence, horizon)
    }

    var changeToken: ChangeToken {
        var bytes = [Self.version]
        bytes.append(contentsOf: generation)
        withUnsafeBytes(of: sequence.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: horizon.littleEndian) { bytes.append(contentsOf: $0) }
        return ChangeToken(data: Data(bytes))
    }
}
