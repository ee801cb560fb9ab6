import Foundation

/// The change token of the embedded and PostgreSQL clouds: a zone generation, a commit sequence
/// number, and the purge horizon when the chain of fetches that produced it began.
///
/// The horizon lets a fetch that started from scratch page past sequence numbers whose
/// tombstones were purged before it began (it never needed them), while a token of a client that
/// fell behind a later purge still expires.
///
/// Layout: one version byte, 16 generation bytes, 8 bytes of sequence and 8 bytes of horizon
/// (little-endian).
package struct SequenceChangeToken: Equatable, Sendable {
    package static let version: UInt8 = 2
    package static let encodedSize = 33

    package var generation: Data
    package var sequence: Int64
    /// The zone's purged sequence when the fetch chain began from no token (0 otherwise).
    package var horizon: Int64

    package init(generation: Data, sequence: Int64, horizon: Int64) {
        self.generation = generation
        self.sequence = sequence
        self.horizon = horizon
    }

    package init(_ token: ChangeToken) throws(CloudError) {
        let bytes = [UInt8](token.data)
        guard bytes.count == Self.encodedSize, bytes[0] == Self.version else {
            throw CloudError(.invalidArguments, "the change token was not issued by this cloud; reset the adapter's sync state")
        }
        generation = Data(bytes[1..<17])
        sequence = bytes[17..<25].withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
        horizon = bytes[25..<33].withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
    }

    /// Whether the tombstones this token still needs are all kept.
    package func isCovered(byPurgedSequence purged: Int64) -> Bool {
        purged <= max(sequence, horizon)
    }

    /// A new random zone generation.
    package static func newGeneration() -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The suffix that makes change tags of different zone generations differ.
    package static func tagSuffix(generation: Data) -> String {
        "-" + generation.prefix(4).map { String(format: "%02x", $0) }.joined()
    }

    package var changeToken: ChangeToken {
        var bytes = [Self.version]
        bytes.append(contentsOf: generation)
        withUnsafeBytes(of: sequence.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: horizon.littleEndian) { bytes.append(contentsOf: $0) }
        return ChangeToken(data: Data(bytes))
    }

    /// Fails with ``CloudError/Code/changeTokenExpired`` unless the token can continue the feed of
    /// `zone`, whose current generation, purge horizon and last sequence are given.
    package func check(zone: ZoneID, generation current: Data, purgedSequence: Int64, lastSequence: Int64) throws(CloudError) {
        guard generation == current else {
            throw CloudError(
                .zoneRecreated,
                "the change token is from before zone \(zone) was deleted and recreated; fetch the zone again from the start")
        }
        guard isCovered(byPurgedSequence: purgedSequence) else {
            throw CloudError(
                .changeTokenExpired,
                "the change token of zone \(zone) is older than the deletions the cloud still keeps; fetch the zone again from the start")
        }
        guard sequence <= lastSequence else {
            throw CloudError(
                .changeTokenAhead,
                "the change token of zone \(zone) is ahead of the cloud: the cloud was put back to an older copy (a backup restored?) since this store last synced, so nothing was applied (its older values would replace newer ones). Run `gateway reset --adapter NAME` for every adapter of the zone, then `gateway sync --store-wins NAME` with the store that holds the newest data to put it back into the cloud (or a plain sync to take the copy's values)")
        }
    }
}
