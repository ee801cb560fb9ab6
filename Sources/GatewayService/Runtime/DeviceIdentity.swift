import Foundation

/// The id this gateway stamps its writes with, so it recognises them when they come back.
/// It must survive restarts; it is generated once and kept in `state_dir/device-id`.
public enum DeviceIdentity {
    /// 1 to 64 ASCII letters, digits, `-`, `_` or `.`: safe in the `<device>:<adapter>` stamp,
    /// file names and metrics labels.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" || $0 == ".")
            }
    }

    /// The configured id, or the one kept in `stateDirectory`, created on first use.
    public static func load(configured: String?, stateDirectory: String) throws -> String {
        if let configured { return configured }
        let file = URL(fileURLWithPath: stateDirectory).appendingPathComponent("device-id")
        if let data = try? Data(contentsOf: file) {
            let stored = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard isValid(stored) else {
                throw GatewayError(
                    .corruptState, "\(file.path) does not hold a device id; restore it from a backup or set gateway.device_id")
            }
            return stored
        }
        let created = UUID().uuidString.lowercased()
        do {
            try Data((created + "\n").utf8).write(to: file, options: .atomic)
        } catch {
            throw GatewayError(.stateUnavailable, "cannot write \(file.path): \(error.localizedDescription)", underlying: error)
        }
        return created
    }
}
