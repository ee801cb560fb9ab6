import Foundation
import GatewayCore

/// The fingerprint of every key this gateway has synced with, by id, in
/// `<state_dir>/key-fingerprints.json`.
///
/// A key id names one key for good: values a gateway encrypts under an id must open on every
/// other gateway holding that id. A key file replaced by another key under the same id (a new
/// `gateway keygen --id k1` over a lost file, a copy from the wrong machine) would seal every
/// encrypted field it uploads so no other gateway can read it, and stall them all. A session
/// refuses to start with such a key (``check(_:)``) before it seals anything. A key is recorded
/// only after a sync in which no value failed to open (``record(_:after:)``), so a wrong key
/// that a first sync shows up is not taken for the gateway's own.
public enum KeyFingerprints {
    /// The file name in the state folder.
    public static let fileName = "key-fingerprints.json"

    /// Refuses a key whose id this gateway synced with under another key.
    /// - Throws: ``ConfigError`` (`inconsistent`) naming the key id, both fingerprints and the
    ///   record; ``GatewayError/Code/stateUnavailable`` when the record cannot be read.
    public static func check(_ configuration: GatewayConfiguration) throws {
        guard let keys = configuration.keyRing?.keys, !keys.isEmpty else { return }
        let (path, known) = try recorded(configuration)
        for key in keys {
            guard let fingerprint = known[key.id], fingerprint != key.fingerprint else { continue }
            throw ConfigError(
                .inconsistent,
                "key \(key.id) in \(configuration.file) is not the key this gateway synced with under that id (fingerprint \(key.fingerprint), recorded \(fingerprint) in \(path)): what it encrypts would not open on the gateways holding the other. Put back the key file the other gateways hold for \(key.id) (`gateway keygen --fingerprint <file>` shows a file's fingerprint); a new key needs a new id, listed first, with the old one kept after it. If the recorded key was the wrong one, remove its entry from \(path)"
            )
        }
    }

    /// Records the fingerprints of keys new to the record after `report`, unless a value failed
    /// to open in it (the key may be another than the zone's). Never throws: a record that cannot
    /// be written is tried again after the next sync.
    public static func record(_ configuration: GatewayConfiguration, after report: SyncReport) {
        guard let keys = configuration.keyRing?.keys, !keys.isEmpty else { return }
        let undecryptable = report.adapters.contains { adapter in
            if case .failed(let code, _) = adapter.outcome { return code == .undecryptableField }
            // A record left out because a value did not open is as telling as a failed sync.
            return adapter.refusedAtEnd.contains { $0.failure.code == SyncError.Code.undecryptableField.rawValue }
        }
        guard !undecryptable, report.adapters.contains(where: { $0.outcome == .synced }),
            let (path, known) = try? recorded(configuration)
        else { return }
        let missing = keys.filter { known[$0.id] == nil }
        guard !missing.isEmpty else { return }
        var updated = known
        for key in missing { updated[key.id] = key.fingerprint }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try? encoder.encode(updated).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// The record's path and its fingerprints by key id (empty before the first).
    private static func recorded(_ configuration: GatewayConfiguration) throws -> (path: String, known: [String: String]) {
        let path = URL(fileURLWithPath: configuration.context.stateDirectory).appendingPathComponent(fileName).path
        guard let data = FileManager.default.contents(atPath: path) else { return (path, [:]) }
        guard let known = try? JSONDecoder().decode([String: String].self, from: data) else {
            throw GatewayError(.stateUnavailable, "\(path) is not the record of key fingerprints this gateway writes; remove it to record the keys again")
        }
        return (path, known)
    }
}
