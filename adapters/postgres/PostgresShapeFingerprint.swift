import PostgresNIO

/// One text that changes whenever a configured table is dropped, recreated, renamed or altered
/// (its columns, their types, its primary key, its capture trigger), or one of the gateway's
/// change tables (`changes`, `change_log`) goes missing. Every transaction of the adapter compares
/// it with the one its table catalog was resolved from.
///
/// A prepared statement whose names are all parameters, so each connection parses it once and
/// the server can keep one generic plan: planning this catalog query cost more than running it
/// (about 0.4 of 0.6 ms a call, and the adapter calls it once per page). The tables are expanded
/// through JSON because the planner estimates `jsonb_array_elements_text` at the same row count
/// whatever the argument, so the generic plan costs what the custom ones do and is chosen; for
/// `unnest` of the array it estimated more rows than a custom plan and kept planning every call.
/// Each table is looked up by a correlated subquery, an index probe on `pg_class`, whatever the
/// size of the catalog.
struct PostgresShapeFingerprint: PostgresPreparedStatement {
    static let name = "gateway_shape_fingerprint_v3"
    static let sql = """
        SELECT coalesce(string_agg(
                   q.name || '/' || coalesce(
                       (SELECT c.oid::text || '/' || c.relkind::text
                               || '/' || coalesce((SELECT string_agg(a.attnum || ':' || a.attname || ':' || a.atttypid || ':' || a.atttypmod
                                                                     || ':' || a.attgenerated::text, ';' ORDER BY a.attnum)
                                                   FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '')
                               || '/' || coalesce((SELECT i.indkey::text FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary), '')
                               || '/' || (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname LIKE '\\_gateway\\_capture%')
                        FROM pg_class c WHERE c.oid = to_regclass(q.name)),
                       'missing'),
                   ',' ORDER BY q.name), '')
               || '|' || coalesce((SELECT string_agg(coalesce(to_regclass(s.name)::oid::text, 'none'), ',' ORDER BY s.name)
                                   FROM unnest($2::text[]) AS s(name)), '')
        FROM jsonb_array_elements_text(to_jsonb($1::text[])) AS q(name)
        """
    typealias Row = String

    /// The configured tables, schema-qualified and quoted.
    var qualifiedTables: [String]
    /// The gateway's change tables, schema-qualified and quoted.
    var stateTables: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(qualifiedTables)
        bindings.append(stateTables)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> String {
        try row.decode(String.self)
    }
}
