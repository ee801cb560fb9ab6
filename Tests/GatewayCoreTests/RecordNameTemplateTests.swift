import GatewayCore
import Testing

@Suite("Record name templates")
struct RecordNameTemplateTests {
    static func template(_ text: String, keys: Int = 1) throws -> RecordNameTemplate {
        try #require(RecordNameTemplate(text, recordType: "Note", keyColumnCount: keys))
    }

    @Test("a template needs <pk> exactly once; <Type> expands to the record type")
    func parsing() throws {
        #expect(RecordNameTemplate("plain", recordType: "Note", keyColumnCount: 1) == nil)
        #expect(RecordNameTemplate("<pk>-<pk>", recordType: "Note", keyColumnCount: 1) == nil)
        let typed = try Self.template("<Type>.<pk>!")
        #expect(typed.prefix == "Note." && typed.suffix == "!")
    }

    @Test("names and key components round-trip, composite keys escaped")
    func roundTrip() throws {
        let single = try Self.template("n:<pk>")
        #expect(single.name(for: ["a|b"]) == "n:a|b")
        #expect(single.components(of: "n:a|b") == ["a|b"])
        let composite = try Self.template("<pk>", keys: 2)
        for parts in [["7", "a|b\\c"], ["", ""], ["x\\", "|"]] {
            #expect(composite.components(of: composite.name(for: parts)) == parts)
        }
        #expect(composite.components(of: "no-separator") == nil)
        #expect(composite.components(of: "a|b|c") == nil)
    }

    @Test("fits tells whether a name has the template's shape, byte for byte")
    func fits() throws {
        let template = try Self.template("<Type>.<pk>.v1")
        #expect(template.fits("Note.42.v1"))
        #expect(template.fits("Note..v1"), "an empty key fits, as components(of:) accepts it")
        #expect(!template.fits("Note.42"))
        #expect(!template.fits("note.42.v1"))
        #expect(!template.fits("Note.v1"), "prefix and suffix may not overlap")
        let bare = try Self.template("<pk>")
        #expect(bare.fits("anything") && bare.fits(""))
        let composite = try Self.template("L<pk>", keys: 2)
        #expect(composite.fits("L7|a") && !composite.fits("L7") && !composite.fits("7|a"))
        // A decomposed accent: the bytes start with the prefix "e" though the characters do not.
        let accent = try #require(RecordNameTemplate("e<pk>", recordType: "T", keyColumnCount: 1))
        #expect(accent.fits("e\u{301}x"))
        for name in ["Note.1.v1", "Note.x|y.v1", "Note..v1", "Note.7.v1.v1"] {
            #expect(template.fits(name) == (template.components(of: name) != nil), "fits agrees with components(of:) on \(name)")
        }
    }

    @Test("templates whose names could meet are found before they are used")
    func collisions() throws {
        #expect(RecordNameTemplate.mayCollide(try Self.template("a-<pk>"), try Self.template("a-<pk>")))
        #expect(RecordNameTemplate.mayCollide(try Self.template("<pk>"), try Self.template("b:<pk>")))
        #expect(!RecordNameTemplate.mayCollide(try Self.template("a-<pk>"), try Self.template("b-<pk>")))
        #expect(!RecordNameTemplate.mayCollide(try Self.template("<pk>.a"), try Self.template("<pk>.b")))
    }
}
