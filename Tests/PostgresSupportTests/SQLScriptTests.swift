import PostgresSupport
import Testing

@Suite("SQL scripts split into statements")
struct SQLScriptTests {
    @Test("semicolons inside strings, identifiers, dollar quotes and comments do not split")
    func quoting() {
        let script = """
            -- a comment; not a statement
            CREATE TABLE "odd;name" (t text DEFAULT 'it''s; fine');
            /* block; /* nested; */ still comment; */
            CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
            CREATE FUNCTION g() RETURNS int AS $$ SELECT 2; $$ LANGUAGE sql;;
            SELECT $1 -- a parameter is no quote
            """
        let statements = SQLScript.statements(script)
        #expect(statements.count == 4, "\(statements)")
        #expect(statements[0].hasSuffix("CREATE TABLE \"odd;name\" (t text DEFAULT 'it''s; fine')"))
        #expect(statements[1].hasSuffix("$body$ SELECT 1; $body$ LANGUAGE sql"))
        #expect(statements[2] == "CREATE FUNCTION g() RETURNS int AS $$ SELECT 2; $$ LANGUAGE sql")
        #expect(statements[3] == "SELECT $1 -- a parameter is no quote")
    }

    @Test("empty scripts and trailing text")
    func edges() {
        #expect(SQLScript.statements("").isEmpty)
        #expect(SQLScript.statements(" ; ;\n").isEmpty)
        #expect(SQLScript.statements("SELECT 1") == ["SELECT 1"])
        #expect(SQLScript.statements("SELECT 'unterminated; still one") == ["SELECT 'unterminated; still one"])
    }
}
