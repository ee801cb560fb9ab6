import Foundation
import Yams

/// State shared by every decoder of one configuration file: where values come from, and which keys
/// the configuration types asked for, so keys nobody asked for can be reported as unknown.
final class ConfigDecodingSession {
    let file: String
    let environment: [String: String]
    /// For every mapping visited (by path), the keys some type asked for, present or not.
    private(set) var queriedKeys: [String: Set<String>] = [:]
    /// Every mapping visited, by path, in the order first visited.
    private(set) var visitedMappings: [(path: String, mapping: Node.Mapping)] = []
    private var visitedPaths: Set<String> = []

    init(file: String, environment: [String: String]) {
        self.file = file
        self.environment = environment
    }

    func location(_ mark: Mark?) -> ConfigLocation? {
        mark.map { ConfigLocation(file: file, line: $0.line, column: $0.column) }
    }

    func visit(_ mapping: Node.Mapping, at path: String) {
        if visitedPaths.insert(path).inserted { visitedMappings.append((path, mapping)) }
    }

    func query(_ key: String, at path: String) {
        queriedKeys[path, default: []].insert(key)
    }

    /// The first key, in file order, that no type asked for; with `withSuggestionOnly`, only
    /// keys that look like a misspelling of a known one.
    func firstUnknownKey(withSuggestionOnly: Bool = false) -> ConfigError? {
        var found: [(mark: Mark?, error: ConfigError)] = []
        for (path, mapping) in visitedMappings {
            let known = queriedKeys[path] ?? []
            for (keyNode, _) in mapping {
                let key = keyNode.scalar?.string ?? ""
                guard !known.contains(key) else { continue }
                if withSuggestionOnly, KeySuggestion.closest(to: key, in: known) == nil { continue }
                found.append((keyNode.mark, unknownKeyError(key, keyNode: keyNode, path: path, known: known)))
            }
        }
        return found.min { ($0.mark?.line ?? 0, $0.mark?.column ?? 0) < ($1.mark?.line ?? 0, $1.mark?.column ?? 0) }?.error
    }

    /// The unknown key of the mapping at `path` that looks like a misspelling of `missing`.
    func misspelling(of missing: String, at path: String) -> ConfigError? {
        guard let mapping = visitedMappings.first(where: { $0.path == path })?.mapping else { return nil }
        let known = queriedKeys[path] ?? []
        for (keyNode, _) in mapping {
            let key = keyNode.scalar?.string ?? ""
            if !known.contains(key), KeySuggestion.closest(to: key, in: [missing]) != nil {
                return unknownKeyError(key, keyNode: keyNode, path: path, known: known)
            }
        }
        return nil
    }

    private func unknownKeyError(_ key: String, keyNode: Node, path: String, known: Set<String>) -> ConfigError {
        let place = path.isEmpty ? "at the top level" : "in '\(path)'"
        let hint = KeySuggestion.hint(for: key, in: known.sorted())
        return ConfigError(.unknownKey, "unknown key '\(key)' \(place)\(hint)", at: location(keyNode.mark))
    }
}

/// A `Decoder` over a composed YAML node that knows where every value is in the file.
///
/// Errors are ``ConfigError``s naming the key path, line and column. Scalars are expanded with
/// ``VariableExpansion`` before they are interpreted, so `${PORT}` can fill a number.
struct ConfigNodeDecoder: Decoder {
    let node: Node
    let codingPath: [any CodingKey]
    let session: ConfigDecodingSession
    /// Where to point when `node` stands for a key that is absent (its enclosing mapping).
    let fallbackMark: Mark?

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    var location: ConfigLocation? { session.location(node.mark ?? fallbackMark) }

    /// The key path as a user reads it: `adapters[0].tables[1].table`.
    var path: String { Self.pathText(codingPath) }

    static func pathText(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue == "Index \(index)" || key.stringValue == "\(index)" {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text
    }

    func problem(_ code: ConfigError.Code, _ message: String) -> ConfigError {
        ConfigError(code, path.isEmpty ? message : "'\(path)': \(message)", at: location)
    }

    func child(_ node: Node, key: any CodingKey) -> ConfigNodeDecoder {
        ConfigNodeDecoder(node: node, codingPath: codingPath + [key], session: session, fallbackMark: node.mark ?? fallbackMark)
    }

    var isNull: Bool {
        guard case .scalar(let scalar) = node else { return false }
        return scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    var kindName: String {
        switch node {
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .alias: "an alias"
        case .scalar: isNull ? "nothing" : "a single value"
        }
    }

    /// The scalar as written, before expansion.
    var rawText: String? { node.scalar?.string }

    func scalarText(expecting what: String) throws -> String {
        guard case .scalar(let scalar) = node, !isNull else {
            throw problem(.wrongType, "expected \(what), found \(kindName)")
        }
        do {
            return try VariableExpansion.expand(scalar.string, environment: session.environment)
        } catch .undefined(let name) {
            throw problem(
                .undefinedVariable, "environment variable \(name) is not set; set it, or write ${\(name):-default} to give a default")
        } catch {
            throw problem(.invalidValue, "malformed variable reference in '\(scalar.string)'; write ${NAME} or ${NAME:-default}")
        }
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == String.self { return try scalarText(expecting: "a text value") as! T }
        if T.self == Bool.self { return try decodeBool() as! T }
        if T.self == Int.self { return try decodeInteger(Int.self) as! T }
        if T.self == Int64.self { return try decodeInteger(Int64.self) as! T }
        if T.self == Double.self { return try decodeDouble() as! T }
        if let choice = T.self as? any ConfigChoice.Type { return try decodeChoice(choice) as! T }
        return try T(from: self)
    }

    func decodeBool() throws -> Bool {
        let text = try scalarText(expecting: "true or false")
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default: throw problem(.wrongType, "expected true or false, found '\(rawText ?? "")'")
        }
    }

    func decodeInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        let text = try scalarText(expecting: "a whole number")
        guard let value = I(text.replacingOccurrences(of: "_", with: "")) else {
            throw problem(.wrongType, "expected a whole number, found '\(rawText ?? "")'")
        }
        return value
    }

    func decodeDouble() throws -> Double {
        let text = try scalarText(expecting: "a number")
        guard let value = Double(text.replacingOccurrences(of: "_", with: "")), value.isFinite else {
            throw problem(.wrongType, "expected a number, found '\(rawText ?? "")'")
        }
        return value
    }

    func decodeChoice<C: ConfigChoice>(_ type: C.Type) throws -> C {
        let options = C.allCases.map(\.rawValue)
        let text = try scalarText(expecting: "one of \(options.joined(separator: ", "))")
        if let value = C(rawValue: text) { return value }
        let hint = KeySuggestion.hint(for: text, in: options)
        throw problem(.invalidValue, "expected one of \(options.joined(separator: ", ")), found '\(rawText ?? "")'\(hint)")
    }

    // MARK: Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let mapping: Node.Mapping
        switch node {
        case .mapping(let value): mapping = value
        case _ where isNull: mapping = Node.Mapping([], .implicit, .any, fallbackMark)
        default: throw problem(.wrongType, "expected a mapping (key: value lines), found \(kindName)")
        }
        session.visit(mapping, at: path)
        return KeyedDecodingContainer(ConfigMappingContainer<Key>(decoder: self, mapping: mapping))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch node {
        case .sequence(let sequence): return ConfigSequenceContainer(decoder: self, items: Array(sequence))
        case _ where isNull: return ConfigSequenceContainer(decoder: self, items: [])
        default: throw problem(.wrongType, "expected a list, found \(kindName)")
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ConfigScalarContainer(decoder: self)
    }
}

/// An index in a list, named `[i]` in messages.
struct ConfigIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

struct ConfigMappingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ConfigNodeDecoder
    let entries: [String: (key: Node, value: Node)]
    let orderedKeys: [String]
    let mark: Mark?

    init(decoder: ConfigNodeDecoder, mapping: Node.Mapping) {
        self.decoder = decoder
        var entries: [String: (key: Node, value: Node)] = [:]
        var orderedKeys: [String] = []
        for (key, value) in mapping {
            let name = key.scalar?.string ?? ""
            entries[name] = (key, value)
            orderedKeys.append(name)
        }
        self.entries = entries
        self.orderedKeys = orderedKeys
        self.mark = mapping.mark ?? decoder.fallbackMark
    }

    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        orderedKeys.forEach { decoder.session.query($0, at: decoder.path) }
        return orderedKeys.compactMap(Key.init(stringValue:))
    }

    func contains(_ key: Key) -> Bool {
        decoder.session.query(key.stringValue, at: decoder.path)
        return entries[key.stringValue] != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard contains(key), let entry = entries[key.stringValue] else { return true }
        return decoder.child(entry.value, key: key).isNull
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try childDecoder(forKey: key, required: true).decodeValue(T.self)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard try !decodeNil(forKey: key) else { return nil }
        return try decode(T.self, forKey: key)
    }

    func childDecoder(forKey key: Key, required: Bool) throws -> ConfigNodeDecoder {
        decoder.session.query(key.stringValue, at: decoder.path)
        if let entry = entries[key.stringValue] { return decoder.child(entry.value, key: key) }
        if required {
            if let misspelled = decoder.session.misspelling(of: key.stringValue, at: decoder.path) { throw misspelled }
            let place = decoder.path.isEmpty ? "at the top level" : "in '\(decoder.path)'"
            throw ConfigError(.missingKey, "missing key '\(key.stringValue)' \(place)", at: decoder.session.location(mark))
        }
        let absent = Node.Scalar("", .implicit, .plain, mark)
        return ConfigNodeDecoder(
            node: .scalar(absent), codingPath: decoder.codingPath + [key], session: decoder.session, fallbackMark: mark)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try childDecoder(forKey: key, required: true).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try childDecoder(forKey: key, required: true).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { decoder }

    /// A decoder for the key's value; an absent key gives a decoder over nothing (null), so
    /// sections may be left out.
    func superDecoder(forKey key: Key) throws -> any Decoder {
        try childDecoder(forKey: key, required: false)
    }
}

struct ConfigSequenceContainer: UnkeyedDecodingContainer {
    let decoder: ConfigNodeDecoder
    let items: [Node]
    private(set) var currentIndex = 0

    init(decoder: ConfigNodeDecoder, items: [Node]) {
        self.decoder = decoder
        self.items = items
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next() throws -> ConfigNodeDecoder {
        guard !isAtEnd else { throw decoder.problem(.wrongType, "the list has too few items") }
        defer { currentIndex += 1 }
        return decoder.child(items[currentIndex], key: ConfigIndexKey(currentIndex))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, decoder.child(items[currentIndex], key: ConfigIndexKey(currentIndex)).isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(T.self) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder { try next() }
}

struct ConfigScalarContainer: SingleValueDecodingContainer {
    let decoder: ConfigNodeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.decodeBool() }
    func decode(_ type: String.Type) throws -> String { try decoder.scalarText(expecting: "a text value") }
    func decode(_ type: Double.Type) throws -> Double { try decoder.decodeDouble() }
    func decode(_ type: Float.Type) throws -> Float { Float(try decoder.decodeDouble()) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.decodeInteger(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.decodeInteger(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.decodeInteger(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.decodeInteger(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.decodeInteger(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.decodeInteger(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.decodeInteger(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.decodeInteger(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.decodeInteger(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.decodeInteger(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(T.self) }
}
