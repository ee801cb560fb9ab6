/// What a SQL store's write of a downloaded row does with the columns the record has no value
/// for. A field that neither the record nor the row's last synced version holds was never in the
/// cloud for this record (a column only this store has, or one just added): the column is left
/// out of the write, so an existing row keeps its value (three-way: no side changed it) and a new
/// row takes the column's default. A field the synced version held is one the cloud cleared, and
/// is written NULL, unless the column is `NOT NULL` with a default, which is always left out (NULL
/// would be refused and stop the store).
public struct EmptyColumnRule: Sendable {
    /// The value columns, in the order of the table's layout.
    public let names: [String]
    /// Positions of the columns with a default.
    public let withDefault: Set<Int>
    /// Positions of the columns declared `NOT NULL` with a default.
    public let notNullWithDefault: Set<Int>

    /// - Parameter columns: each value column in layout order, whether it is `NOT NULL` and
    ///   whether it has a default.
    public init(_ columns: [(name: String, notNull: Bool, hasDefault: Bool)]) {
        names = columns.map(\.name)
        withDefault = Set(columns.indices.filter { columns[$0].hasDefault })
        notNullWithDefault = Set(columns.indices.filter { columns[$0].notNull && columns[$0].hasDefault })
    }

    /// The positions that `record` has no value for; `mapping` maps its layout onto the table's.
    public func emptyColumns(of record: Record, mapping: LayoutMapping) -> Set<Int> {
        var empty: Set<Int> = []
        for index in names.indices where mapping.sourcePositions[index].flatMap({ record[position: $0] }) == nil { empty.insert(index) }
        return empty
    }

    /// Which of the `empty` columns a row's write leaves out, given the fields the row's synced
    /// version held (`nil`: the store has no metadata for it, a new row).
    public func leftOut(of empty: Set<Int>, synced fields: Set<String>?) -> Set<Int> {
        guard let fields else { return empty.intersection(withDefault) }
        return empty.filter { notNullWithDefault.contains($0) || !fields.contains(names[$0]) }
    }
}
