import Foundation
import GatewayCore

/// The fingerprint of every key this gateway has used, by id, in `<state_dir>/key-fingerprints.json`.
///
/// A key id names one key for good: values a gateway encrypts under an id must open on every
/// other gateway holding that id. A key file replaced by another key under the same id (a new
/// `gateway keygen --id k1` over a lost file, a copy from the wrong machine) would seal every
/// encrypted field it uploads so no other gateway can read it, and stall them all. The session
/// refuses to start with such a key before it writes anything.
public enum KeyFingerprints {
    /// The file name in the state folder.
    public static let fileName = "key-fingerprints.json"

    /// Records the fingerprints of keys new to this gateway and refuses a key whose id was used
    /// with another key before.
    /// - Throws: ``ConfigError`` (`inconsistent`) naming the key id and both fingerprints;
    ///   ``GatewayError/Code/stateUnavailable`` when the record cannot be read or written.
    public static func check(_ configuration: GatewayConfiguration) throws {
        guard let keys = configuration.keyRing?.keys, !keys.isEmpty else { return }
        let path = URL(fileURLWithPath: configuration.context.stateDirectory).appendingPathComponent(fileName).path
        var known: [String: String] = [:]
        if let data = FileManager.default.contents(atPath: path) {
            guard let decoded = try? JSONDecoder().decode([String: String].self, from: data) else {
                throw GatewayError(.stateUnavailable, "\(path) is not the record of key fingerprints this gateway writes; remove it to record the keys again")
            }
            known = decoded
        }
        for key in keys {
            guard let recorded = known[key.id], recorded != key.fingerprint else { continue }
            throw ConfigError(
                .inconsistent,
                "key \(key.id) in \(configuration.file) is not the key this gateway used under that id (fingerprint \(key.fingerprint), recorded \(recorded) in \(path)): what it encrypts would not open on the gateways holding the other. Put back the key file the other gateways hold for \(key.id) (`gateway keygen --fingerprint <file>` shows a file's fingerprint); a new key needs a new id, listed first, with the old one kept after it"
            )
        }
        let missing = keys.filter { known[$0.id] == nil }
        guard !missing.isEmpty else { return }
        for key in missing { known[key.id] = key.fingerprint }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        do {
            try encoder.encode(known).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw GatewayError(.stateUnavailable, "cannot write \(path): \(error.localizedDescription)", underlying: error)
        }
    }
}
