/// The names a config gives to adapters, keys and devices.
public enum ConfigName {
    /// 1 to 64 ASCII letters, digits, `-`, `_` or `.`: safe in the `<device>:<adapter>@<version>` writer stamp,
    /// file names and metrics labels.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" || $0 == ".")
            }
    }
}
