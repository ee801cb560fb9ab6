import Foundation
import GatewayCore
import GatewayTesting
import Testing

@Suite("Exact text")
struct ExactTextTests {
    @Test("texts are equal exactly when their bytes are, and equal texts hash alike")
    func bytesDecide() {
        let alphabet = ["a", "e", "\u{301}", "\u{E9}", "A\u{30A}", "\u{C5}", "\u{212B}", "|", "🇫🇷", "\u{0}", "long text over fifteen bytes"]
        var generator = SeededGenerator(seed: 23)
        for _ in 0..<5_000 {
            let texts = (0..<2).map { _ in
                (0..<Int.random(in: 0...3, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            }
            let sameBytes = Array(texts[0].utf8) == Array(texts[1].utf8)
            #expect(ExactText.equal(texts[0], texts[1]) == sameBytes)
            #expect((ExactText.Key(texts[0]) == ExactText.Key(texts[1])) == sameBytes)
            if sameBytes { #expect(ExactText.Key(texts[0]).hashValue == ExactText.Key(texts[1]).hashValue) }
        }
    }

    @Test("record IDs whose names differ only in Unicode normalization are two keys; the zone still counts")
    func recordIDs() {
        let zone = ZoneID(zoneName: "Z")
        let composed = RecordID(recordName: "caf\u{E9}", zoneID: zone)
        let decomposed = RecordID(recordName: "cafe\u{301}", zoneID: zone)
        #expect(composed.recordName == decomposed.recordName, "Swift's String calls them equal")
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed, composed]).count == 2)
        #expect(composed == RecordID(recordName: "caf\u{E9}", zoneID: zone))
        #expect(composed != RecordID(recordName: "caf\u{E9}", zoneID: ZoneID(zoneName: "Other")))
        var byID: [RecordID: Int] = [composed: 1]
        byID[decomposed] = 2
        #expect(byID[composed] == 1 && byID[decomposed] == 2)
    }

    @Test("record names as keys compare bytes, hash as their record IDs do, and code as plain strings")
    func recordNames() throws {
        let zone = ZoneID(zoneName: "Z")
        let composed = RecordID(recordName: "caf\u{E9}", zoneID: zone)
        let decomposed = RecordID(recordName: "cafe\u{301}", zoneID: zone)
        #expect(composed.name != decomposed.name)
        #expect(composed.name == RecordName("caf\u{E9}"))
        var byName: [RecordName: Int] = [composed.name: 1]
        byName[decomposed.name] = 2
        #expect(byName.count == 2 && byName[RecordName("cafe\u{301}")] == 2)
        var idHash = Hasher()
        composed.hash(into: &idHash)
        var nameHash = Hasher()
        composed.name.hash(into: &nameHash)
        #expect(idHash.finalize() == nameHash.finalize())
        let coded = try JSONEncoder().encode([composed.name, "plain"])
        #expect(String(decoding: coded, as: UTF8.self) == "[\"caf\u{E9}\",\"plain\"]")
        #expect(try JSONDecoder().decode([RecordName].self, from: coded) == [composed.name, "plain"])
    }

    @Test("a JSON object whose member names differ only in Unicode normalization is refused where it is written")
    func jsonMembers() throws {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(Data("{\"caf\u{E9}\": 1,\n \"cafe\u{301}\": 2}".utf8), numbers: .exact) }
        #expect(error?.reason.contains("Unicode normalization") == true)
        #expect(error?.line == 2)
        #expect(try JSONValue.parse(Data("{\"a\": 1, \"a\": 2}".utf8), numbers: .exact) == .object(["a": .integer(2)]), "a name given twice keeps its last value")
    }
}
