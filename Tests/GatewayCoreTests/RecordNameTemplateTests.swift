import GatewayCore
import GatewayTesting
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
        #expect(accent.components(of: "e\u{301}x") == ["\u{301}x"], "components(of:) splits bytes like fits")
        for name in ["Note.1.v1", "Note.x|y.v1", "Note..v1", "Note.7.v1.v1", "Note.\u{301}.v1", "Note.v1\u{301}"] {
            #expect(template.fits(name) == (template.components(of: name) != nil), "fits agrees with components(of:) on \(name)")
        }
    }

    @Test("any components round-trip through a name, byte for byte, whatever characters they hold", arguments: 1...3)
    func roundTripProperty(keys: Int) throws {
        // Separators, escapes and combining marks next to them: where characters and bytes differ.
        let alphabet: [String] = ["a", "7", "|", "\\", "\u{301}", "e\u{301}", "é", "🇫🇷", "\u{200D}", " ", "\u{0}"]
        var generator = SeededGenerator(seed: UInt64(keys))
        let templates = try ["<pk>", "n:<pk>", "<Type>.<pk>.v1", "e<pk>\u{301}", "|<pk>\\"].map { try Self.template($0, keys: keys) }
        for _ in 0..<2_000 {
            let parts = (0..<keys).map { _ in
                (0..<Int.random(in: 0...4, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            }
            for template in templates {
                let name = template.name(for: parts)
                let roundTrips = template.components(of: name).map { $0.map { Array($0.utf8) } } == parts.map { Array($0.utf8) }
                #expect(roundTrips, "\(parts.map { Array($0.unicodeScalars) }) in \(template)")
                #expect(template.fits(name))
                if !roundTrips { return }  // one failing case is enough to read
            }
        }
    }

    @Test("templates whose names could meet are found before they are used")
    func collisions() throws {
        #expect(RecordNameTemplate.mayCollide(try Self.template("a-<pk>"), try Self.template("a-<pk>")))
        #expect(RecordNameTemplate.mayCollide(try Self.template("<pk>"), try Self.template("b:<pk>")))
        #expect(!RecordNameTemplate.mayCollide(try Self.template("a-<pk>"), try Self.template("b-<pk>")))
        #expect(!RecordNameTemplate.mayCollide(try Self.template("<pk>.a"), try Self.template("<pk>.b")))
        let decomposed = try #require(RecordNameTemplate("e\u{301}<pk>", recordType: "T", keyColumnCount: 1))
        #expect(RecordNameTemplate.mayCollide(try Self.template("e<pk>"), decomposed), "names are matched by bytes")
    }
}
