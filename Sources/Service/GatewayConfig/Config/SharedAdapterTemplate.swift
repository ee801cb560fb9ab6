import Crypto
import Foundation
import GatewayCore
import Yams

/// An adapter entry with `database: shared`: a template that makes one adapter for each zone
/// shared with the gateway's user (as SyncKit's shared-database synchronizer has one model
/// adapter per shared zone). The made adapter reads the entry with `{zone}` and `{owner}` in
/// its text values replaced by the zone's name and its owner's user record name, each made safe
/// for a file or schema name (``safeName(_:)``), so a zone name never reaches outside the folder
/// or schema the pattern puts it in. Its name is `<template>.<owner>.<zone>` in the same form.
public struct SharedAdapterTemplate: Sendable {
    /// The template entry's common keys (`zone` is the filter: a zone name, or `*`).
    public let settings: AdapterSettings
    /// The config's paths.
    public let context: ConfigContext
    let kind: any AdapterKind
    let entry: TemplateNode
    let file: String
    let environment: [String: String]
    let processorProcesses: ProcessorProcesses

    /// The template's `name`.
    public var name: String { settings.name.value }

    /// Whether the template makes an adapter for `zone` (a zone shared with the user).
    public func takes(_ zone: ZoneID) -> Bool {
        settings.zone.value == "*" || ExactText.equal(settings.zone.value, zone.zoneName)
    }

    /// The adapter for the shared `zone` (named as the sharing user's view names it: its owner
    /// is the owner's user record name).
    /// - Throws: ``ConfigError`` when the entry with this zone's names does not decode.
    public func adapter(for zone: ZoneID) throws -> AdapterConfiguration {
        let owner = Self.safeName(zone.ownerName)
        let zoneName = Self.safeName(zone.zoneName)
        var madeName = "\(name).\(owner).\(zoneName)"
        if madeName.utf8.count > 64 { madeName = "\(name.prefix(40)).\(Self.digest(zone.ownerName + "\u{1F}" + zone.zoneName).prefix(16))" }
        let node = entry.node.substituting { text, key in
            switch key {
            case "name": madeName
            case "zone": zone.zoneName
            default: text.replacingOccurrences(of: "{zone}", with: zoneName).replacingOccurrences(of: "{owner}", with: owner)
            }
        }
        let session = ConfigDecodingSession(file: file, environment: environment)
        let decoder = ConfigNodeDecoder(node: node, codingPath: entry.codingPath, session: session, fallbackMark: node.mark)
        var settings = try AdapterSettings(from: decoder)
        settings.zone = Located(zone.zoneName, at: settings.zone.location, path: settings.zone.path)
        settings.sharedBy = zone.ownerName
        let plan = try kind.decodePlan(settings: settings, from: decoder, context: context)
        return AdapterConfiguration(settings: settings, plan: plan, context: context, processorProcesses: processorProcesses)
    }

    /// `text` as a name that is safe in a path or a schema: kept as it is when it is 1 to 40
    /// letters, digits, `-` or `_` and does not end in `-` and 16 hexadecimal digits; otherwise
    /// those characters of it (others become `_`, at most 23), `-` and 16 hexadecimal digits of its
    /// SHA-256. A kept name never has the form of a made one, and two made ones would need a
    /// 64-bit collision of SHA-256, so two names never meet.
    public static func safeName(_ text: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".unicodeScalars)
        if !text.isEmpty, text.utf8.count <= 40, text.unicodeScalars.allSatisfy({ allowed.contains($0) }), !looksMade(text) { return text }
        let kept = String(String.UnicodeScalarView(text.unicodeScalars.prefix(23).map { allowed.contains($0) ? $0 : "_" }))
        return "\(kept)-\(digest(text).prefix(16))"
    }

    /// Whether `name` ends as a made safe name does: `-` and 16 hexadecimal digits.
    private static func looksMade(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard scalars.count >= 17, scalars[scalars.count - 17] == "-" else { return false }
        return scalars.suffix(16).allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
    }

    private static func digest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Reads a template entry: checks it decodes for a sample zone, so mistakes surface when the
    /// config is read, not when a share arrives.
    static func read(
        entry: any Decoder, settings: AdapterSettings, kind: any AdapterKind, context: ConfigContext, file: String, environment: [String: String],
        processorProcesses: ProcessorProcesses
    ) throws -> SharedAdapterTemplate {
        guard let decoder = entry as? ConfigNodeDecoder else {
            throw entry.configProblem(.unsupported, "a template entry must come from a config file")
        }
        let template = SharedAdapterTemplate(
            settings: settings, context: context, kind: kind, entry: TemplateNode(node: decoder.node, codingPath: decoder.codingPath), file: file,
            environment: environment, processorProcesses: processorProcesses)
        // The sample's keys are asked for through the config's own decoder, so unknown keys of
        // the template are reported like any other entry's.
        let sample = decoder.node.substituting { text, key in
            key == "name" || key == "zone" ? text : text.replacingOccurrences(of: "{zone}", with: "zone").replacingOccurrences(of: "{owner}", with: "owner")
        }
        let sampleDecoder = ConfigNodeDecoder(node: sample, codingPath: decoder.codingPath, session: decoder.session, fallbackMark: decoder.fallbackMark)
        var sampleSettings = settings
        sampleSettings.zone = Located("zone")
        sampleSettings.sharedBy = "owner"
        let plan = try kind.decodePlan(settings: sampleSettings, from: sampleDecoder, context: context)
        if settings.onRevoke == .delete, !plan.canDeleteStore {
            throw entry.configProblem(.unsupported, "a \(kind.name) adapter cannot delete its store; use on_revoke: keep")
        }
        return template
    }
}

/// A template entry's YAML and where it sits in the file.
struct TemplateNode: @unchecked Sendable {
    // Yams' `Node` is an immutable value tree; the coding path holds plain keys.
    let node: Node
    let codingPath: [any CodingKey]
}

extension Node {
    /// The node with every scalar of the top mapping's values (and below) replaced by
    /// `replace(text, key)`, `key` being the top-level key it sits under; positions are kept.
    func substituting(_ replace: (String, String) -> String) -> Node {
        guard case .mapping(let mapping) = self else { return self }
        var pairs: [(Node, Node)] = []
        for (key, value) in mapping {
            let name = key.scalar?.string ?? ""
            pairs.append((key, value.replacingScalars { replace($0, name) }))
        }
        return .mapping(Node.Mapping(pairs, mapping.tag, mapping.style, mapping.mark))
    }

    private func replacingScalars(_ replace: (String) -> String) -> Node {
        switch self {
        case .scalar(let scalar):
            return .scalar(Node.Scalar(replace(scalar.string), scalar.tag, scalar.style, scalar.mark))
        case .mapping(let mapping):
            return .mapping(Node.Mapping(mapping.map { ($0.key, $0.value.replacingScalars(replace)) }, mapping.tag, mapping.style, mapping.mark))
        case .sequence(let sequence):
            return .sequence(Node.Sequence(sequence.map { $0.replacingScalars(replace) }, sequence.tag, sequence.style, sequence.mark))
        default:
            return self
        }
    }
}
