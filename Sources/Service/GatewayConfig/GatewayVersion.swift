/// The gateway's release, as `gateway --version` prints it. Its state layouts and wire formats
/// are versioned on their own (each upgrades in place); this names the build for operators.
public enum GatewayVersion {
    /// The current release: semantic versioning, below 1.0 while the contracts still move.
    public static let current = "0.9.0"
}
