import Foundation
import GatewayCore

/// One entry of a record type's `processors` list: how a field changes between the store and
/// the zone (``RecordProcessor``). Entries run in order on the way out, in reverse on the way in.
///
/// Kinds: `rename` (`from`: the store's field, `to`: the zone's) and `file_reference` (`field`:
/// the store's field holding a path, `folder`: the folder the paths are relative to, itself
/// relative to the config file).
public enum ProcessorSettings: Sendable, Decodable {
    /// `kind: rename`.
    case rename(from: Located<String>, to: Located<String>)
    /// `kind: file_reference`.
    case fileReference(field: Located<String>, folder: Located<String>)

    enum Keys: String, CodingKey { case kind, from, to, field, folder }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let kind = try container.decode(Located<String>.self, forKey: .kind)
        func name(_ key: Keys) throws -> Located<String> {
            let value = try container.decode(Located<String>.self, forKey: key)
            guard !value.value.isEmpty, value.value.utf8.count <= 255 else { throw value.problem(.invalidValue, "must be a field name of 1–255 bytes") }
            return value
        }
        switch kind.value {
        case "rename":
            let (from, to) = (try name(.from), try name(.to))
            guard from.value != to.value else { throw to.problem(.invalidValue, "renames '\(from.value)' to itself") }
            self = .rename(from: from, to: to)
        case "file_reference":
            let folder = try container.decode(Located<String>.self, forKey: .folder)
            guard !folder.value.isEmpty else { throw folder.problem(.invalidValue, "must name a folder") }
            self = .fileReference(field: try name(.field), folder: folder)
        default:
            throw kind.problem(
                .unknownKind,
                "unknown processor kind '\(kind.value)'; this build has file_reference, rename\(KeySuggestion.hint(for: kind.value, in: ["file_reference", "rename"]))")
        }
    }

    /// The field of the store this processor reads (the renamed or the path field).
    public var storeField: Located<String> {
        switch self {
        case .rename(let from, _): from
        case .fileReference(let field, _): field
        }
    }

    /// The processor, with paths resolved against `context`.
    public func processor(context: ConfigContext) -> any RecordProcessor {
        switch self {
        case .rename(let from, let to): RenameFieldProcessor(storeName: from.value, zoneName: to.value)
        case .fileReference(let field, let folder):
            FileReferenceProcessor(field: field.value, folder: URL(fileURLWithPath: context.resolve(folder.value)))
        }
    }
}
