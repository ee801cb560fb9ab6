import Synchronization

/// An ordered list of field names, shared by every record that has those fields: a table's
/// columns, a page of cloud records of one shape.
///
/// Records carry their values by position in their layout (``Record/values``), so the sync path
/// neither builds, hashes nor copies a `[String: FieldValue]` per record (decision D1,
/// `docs/architecture.md`). A layout is built once and shared; what it derives (the positions by
/// name, the canonical order, the layout with the gateway's reserved fields added) is computed once
/// per layout.
public final class RecordLayout: Sendable, Hashable, CustomStringConvertible {
    /// The field names, in position order. Unique.
    public let fieldNames: [String]
    /// Positions by field name.
    private let positions: [String: Int]
    /// Positions ordered by field name: the order of the canonical encoding and of fingerprints.
    public let canonicalOrder: [Int]
    /// Layouts this one derives, kept so that each is built once.
    private let derived = Mutex<[[String]: RecordLayout]>([:])

    /// A layout of `fieldNames`; a name given twice is kept once, at its first position.
    public init(_ fieldNames: [String]) {
        var unique: [String] = []
        unique.reserveCapacity(fieldNames.count)
        var positions = [String: Int](minimumCapacity: fieldNames.count)
        for name in fieldNames where positions[name] == nil {
            positions[name] = unique.count
            unique.append(name)
        }
        self.fieldNames = unique
        self.positions = positions
        canonicalOrder = unique.indices.sorted { unique[$0] < unique[$1] }
    }

    /// The layout without fields.
    public static let empty = RecordLayout([])

    /// How many fields the layout has.
    public var count: Int { fieldNames.count }

    /// The position of `name`, `nil` when the layout has no such field.
    public func position(of name: String) -> Int? { positions[name] }

    /// This layout followed by `names` (those it lacks), built once per layout and list.
    public func adding(_ names: [String]) -> RecordLayout {
        let missing = names.filter { positions[$0] == nil }
        guard !missing.isEmpty else { return self }
        return derived.withLock { cache in
            if let known = cache[missing] { return known }
            let layout = RecordLayout(fieldNames + missing)
            cache[missing] = layout
            return layout
        }
    }

    /// Two layouts are equal when they list the same names in the same order.
    public static func == (lhs: RecordLayout, rhs: RecordLayout) -> Bool {
        lhs === rhs || lhs.fieldNames == rhs.fieldNames
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fieldNames)
    }

    public var description: String { "(" + fieldNames.joined(separator: ", ") + ")" }

    // MARK: Shared layouts

    /// Layouts of the field sets built from dictionaries (``Record/init(id:recordType:changeTag:fields:modifiedAt:)``),
    /// by sorted names, so records of one shape share one layout. Bounded: a process that meets
    /// ever new shapes starts over rather than grow.
    private static let shared = Mutex<[[String]: RecordLayout]>([:])
    private static let sharedLimit = 4_096

    /// The shared layout of exactly `sortedNames` (ascending, unique): what readers of many
    /// records of one shape (a page of CloudKit's JSON) give their records.
    public static func shared(sortedNames: [String]) -> RecordLayout {
        shared.withLock { cache in
            if let known = cache[sortedNames] { return known }
            if cache.count >= sharedLimit { cache.removeAll(keepingCapacity: true) }
            let layout = RecordLayout(sortedNames)
            cache[sortedNames] = layout
            return layout
        }
    }
}

/// Maps the positions of one layout onto another by field name, computed once per pair: an
/// adapter writing records of a cloud layout into its columns, the merge aligning two records.
public struct LayoutMapping: Sendable {
    /// The layout values are read from.
    public let source: RecordLayout
    /// The layout values are written to.
    public let target: RecordLayout
    /// For each target position, the source position holding that field (`nil`: the source lacks it).
    public let sourcePositions: [Int?]

    /// The mapping of `source`'s positions to `target`'s, by field name.
    public init(from source: RecordLayout, to target: RecordLayout) {
        self.source = source
        self.target = target
        sourcePositions = target.fieldNames.map { source.position(of: $0) }
    }

    /// The values of `record` (of layout ``source``) in ``target``'s positions.
    public func values(of record: Record) -> [FieldValue?] {
        sourcePositions.map { $0.flatMap { record.values[$0] } }
    }
}

/// Remembers the mapping of the layouts last seen onto one target, for adapters that receive
/// records of a few layouts over and over. Not shared between tasks.
public struct LayoutMappings {
    /// The layout every source is mapped to.
    public let target: RecordLayout
    private var known: [ObjectIdentifier: LayoutMapping] = [:]

    /// Mappings into `target`, made as sources are met.
    public init(target: RecordLayout) {
        self.target = target
    }

    /// The mapping from `layout` onto ``target``.
    public mutating func mapping(from layout: RecordLayout) -> LayoutMapping {
        if let mapping = known[ObjectIdentifier(layout)], mapping.source === layout { return mapping }
        let mapping = LayoutMapping(from: layout, to: target)
        known[ObjectIdentifier(layout)] = mapping
        return mapping
    }
}
