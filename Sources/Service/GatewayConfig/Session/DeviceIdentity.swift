import Foundation

/// The id this gateway stamps its writes with, so it recognises them when they come back.
/// It must survive restarts; it is generated once and kept in `state_dir/device-id`.
public enum DeviceIdentity {
    /// Whether `name` can be a device id (see ``ConfigName``).
    public static func isValid(_ name: String) -> Bool { ConfigName.isValid(name) }

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
            let full = (error as? CocoaError)?.code == .fileWriteOutOfSpace
                || ((error as NSError).domain == NSPOSIXErrorDomain && (error as NSError).code == Int(ENOSPC))
            let reason = full ? "the disk holding it is full; free space, then sync again" : error.localizedDescription
            throw GatewayError(.stateUnavailable, "cannot write \(file.path): \(reason)", underlying: error)
        }
        return created
    }
}
