import Foundation

/// The gateway's canonical binary encoding of record fields.
///
/// Clouds store fields in this form and use its length as the record size; the synchronizer
/// fingerprints values with it. Field names are written in sorted order, so equal field sets
/// always encode to equal bytes.
public enum FieldCoding {
    static let formatVersion: UInt8 = 1

    enum Tag: UInt8 {
        case string = 1, int64, double, timestamp, bytes, reference, asset, location, list, encrypted
    }

    /// Encodes a set of fields.
    public static func encode(_ fields: [String: FieldValue]) -> [UInt8] {
        var writer = BinaryWriter(capacity: 64 + fields.count * 24)
        writer.writeByte(formatVersion)
        writer.writeVarint(UInt64(fields.count))
        // Sorting positions rather than (name, value) pairs moves no values around.
        for index in fields.indices.sorted(by: { fields[$0].key < fields[$1].key }) {
            let (name, value) = fields[index]
            writer.writeString(name)
            encode(value, into: &writer)
        }
        return writer.bytes
    }

    /// Encodes a record's non-null fields: the same bytes as ``encode(_:)`` of its ``Record/fields``,
    /// read by position in the layout's canonical order.
    public static func encode(_ record: Record) -> [UInt8] {
        var writer = BinaryWriter(capacity: 64 + record.values.count * 24)
        encode(record, into: &writer)
        return writer.bytes
    }

    /// How many bytes ``encode(_:)-(Record)`` produces for `record`, counted without encoding it:
    /// what a cloud charges the record against its size limits, known before a request is built.
    public static func encodedSize(of record: Record) -> Int {
        var size = 1 + varintSize(record.fieldCount)
        let names = record.layout.fieldNames
        for position in record.values.indices {
            guard let value = record.values[position] else { continue }
            size += stringSize(names[position]) + encodedSize(of: value)
        }
        return size
    }

    /// How many bytes ``encode(_:into:identityOnly:)`` appends for `value` (with its URL).
    static func encodedSize(of value: FieldValue) -> Int {
        switch value {
        case .string(let string): 1 + stringSize(string)
        case .int64, .double, .timestamp: 9
        case .bytes(let data): 1 + varintSize(data.count) + data.count
        case .reference(let reference):
            1 + stringSize(reference.recordID.recordName) + stringSize(reference.recordID.zoneID.zoneName)
                + stringSize(reference.recordID.zoneID.ownerName) + stringSize(reference.action.rawValue)
        case .asset(let asset): 1 + stringSize(asset.checksum) + 8 + 1 + (asset.downloadURL.map(stringSize) ?? 0)
        case .location(let location):
            1 + 16
                + [location.horizontalAccuracy, location.verticalAccuracy, location.altitude, location.speed, location.course]
                .reduce(0) { $0 + ($1 == nil ? 1 : 9) } + (location.timestamp == nil ? 1 : 9)
        case .list(let values): values.reduce(1 + varintSize(values.count)) { $0 + encodedSize(of: $1) }
        case .encrypted(let data): 1 + varintSize(data.count) + data.count
        }
    }

    private static func stringSize(_ string: String) -> Int {
        let count = string.utf8.count
        return varintSize(count) + count
    }

    private static func varintSize(_ value: Int) -> Int {
        var value = UInt64(value)
        var size = 1
        while value >= 0x80 {
            value >>= 7
            size += 1
        }
        return size
    }

    /// Appends a record's encoded fields to `writer`.
    public static func encode(_ record: Record, into writer: inout BinaryWriter) {
        writer.writeByte(formatVersion)
        writer.writeVarint(UInt64(record.fieldCount))
        let names = record.layout.fieldNames
        for position in record.layout.canonicalOrder {
            guard let value = record.values[position] else { continue }
            writer.writeString(names[position])
            encode(value, into: &writer)
        }
    }

    /// Decodes what ``encode(_:)-(Record)`` produced into values by position in a layout of the stored
    /// names, taken from `layouts` so that records of one shape share one layout (their names are
    /// compared as bytes with the last layout's, not made into strings again).
    public static func decode(_ bytes: UnsafeRawBufferPointer, layouts: inout DecodedLayouts) throws(BinaryDecodingError)
        -> (layout: RecordLayout, values: [FieldValue?])
    {
        var reader = BinaryReader(bytes)
        let version = try reader.readByte()
        guard version == formatVersion else {
            throw BinaryDecodingError(.unsupportedVersion, offset: 0, reason: "unknown field format version \(version)")
        }
        let count = try reader.readLength()
        var values: [FieldValue?] = []
        values.reserveCapacity(count)
        var layout = layouts.last.flatMap { $0.layout.count == count ? $0 : nil }
        var names: [String] = []
        for index in 0..<count {
            let raw = try reader.readStringBytes()
            if let known = layout, !known.utf8Names[index].elementsEqual(raw) {
                // Another shape: spell out the names read so far, and go on without the guess.
                names = (0..<index).map { known.layout.fieldNames[$0] }
                layout = nil
            }
            if layout == nil { names.append(String(decoding: raw, as: UTF8.self)) }
            values.append(try decodeValue(&reader, depth: 0))
        }
        guard reader.isAtEnd else {
            throw BinaryDecodingError(offset: reader.offset, reason: "trailing bytes after the fields")
        }
        if let layout { return (layout.layout, values) }
        let decoded = layouts.layout(of: names)
        guard decoded.layout.count == values.count else {
            throw BinaryDecodingError(offset: reader.offset, reason: "a field is stored twice")
        }
        return (decoded.layout, values)
    }

    /// Decodes what ``encode(_:)-([String:FieldValue])`` produced.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(BinaryDecodingError) -> [String: FieldValue] {
        var reader = BinaryReader(bytes)
        let version = try reader.readByte()
        guard version == formatVersion else {
            throw BinaryDecodingError(.unsupportedVersion, offset: 0, reason: "unknown field format version \(version)")
        }
        let count = try reader.readLength()
        var fields = [String: FieldValue](minimumCapacity: count)
        for _ in 0..<count {
            let name = try reader.readString()
            fields[name] = try decodeValue(&reader, depth: 0)
        }
        guard reader.isAtEnd else {
            throw BinaryDecodingError(offset: reader.offset, reason: "trailing bytes after the fields")
        }
        return fields
    }

    /// Decodes what ``encode(_:)-([String:FieldValue])`` produced.
    public static func decode(_ bytes: [UInt8]) throws(BinaryDecodingError) -> [String: FieldValue] {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(BinaryDecodingError) in try decode(buffer) }
        }.get()
    }

    /// Encodes one value, for fingerprints and encryption.
    public static func encode(_ value: FieldValue) -> [UInt8] {
        var writer = BinaryWriter(capacity: 32)
        encode(value, into: &writer)
        return writer.bytes
    }

    /// Decodes what ``encode(_:)-(FieldValue)`` produced.
    public static func decodeValue(_ bytes: [UInt8]) throws(BinaryDecodingError) -> FieldValue {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(BinaryDecodingError) in try decodeValue(buffer) }
        }.get()
    }

    /// Decodes what ``encode(_:)-(FieldValue)`` produced, from raw bytes.
    public static func decodeValue(_ buffer: UnsafeRawBufferPointer) throws(BinaryDecodingError) -> FieldValue {
        var reader = BinaryReader(buffer)
        let value = try decodeValue(&reader, depth: 0)
        guard reader.isAtEnd else {
            throw BinaryDecodingError(offset: reader.offset, reason: "trailing bytes after the value")
        }
        return value
    }

    /// Appends one value to `writer`.
    /// - Parameters:
    ///   - value: the value to write.
    ///   - writer: where its bytes go.
    ///   - identityOnly: leave out what says where an asset's bytes are (its download
    ///   URL), for fingerprints: the same asset fetched from a cloud that adds a URL is unchanged.
    public static func encode(_ value: FieldValue, into writer: inout BinaryWriter, identityOnly: Bool = false) {
        switch value {
        case .string(let string):
            writer.writeByte(Tag.string.rawValue)
            writer.writeString(string)
        case .int64(let int):
            writer.writeByte(Tag.int64.rawValue)
            writer.writeInt64(int)
        case .double(let double):
            writer.writeByte(Tag.double.rawValue)
            writer.writeDouble(double)
        case .timestamp(let timestamp):
            writer.writeByte(Tag.timestamp.rawValue)
            writer.writeInt64(timestamp.millisecondsSince1970)
        case .bytes(let data):
            writer.writeByte(Tag.bytes.rawValue)
            writer.writeData(data)
        case .reference(let reference):
            writer.writeByte(Tag.reference.rawValue)
            writer.writeString(reference.recordID.recordName)
            writer.writeString(reference.recordID.zoneID.zoneName)
            writer.writeString(reference.recordID.zoneID.ownerName)
            writer.writeString(reference.action.rawValue)
        case .asset(let asset):
            writer.writeByte(Tag.asset.rawValue)
            writer.writeString(asset.checksum)
            writer.writeInt64(asset.size)
            writeOptional(identityOnly ? nil : asset.downloadURL, into: &writer) { $1.writeString($0) }
        case .location(let location):
            writer.writeByte(Tag.location.rawValue)
            writer.writeDouble(location.latitude)
            writer.writeDouble(location.longitude)
            for optional in [
                location.horizontalAccuracy, location.verticalAccuracy, location.altitude, location.speed,
                location.course,
            ] {
                writeOptional(optional, into: &writer) { $1.writeDouble($0) }
            }
            writeOptional(location.timestamp, into: &writer) { $1.writeInt64($0.millisecondsSince1970) }
        case .list(let values):
            writer.writeByte(Tag.list.rawValue)
            writer.writeVarint(UInt64(values.count))
            for element in values { encode(element, into: &writer, identityOnly: identityOnly) }
        case .encrypted(let data):
            writer.writeByte(Tag.encrypted.rawValue)
            writer.writeData(data)
        }
    }

    private static func writeOptional<T>(
        _ value: T?, into writer: inout BinaryWriter, _ write: (T, inout BinaryWriter) -> Void
    ) {
        if let value {
            writer.writeByte(1)
            write(value, &writer)
        } else {
            writer.writeByte(0)
        }
    }

    private static func readOptional<T>(
        _ reader: inout BinaryReader, _ read: (inout BinaryReader) throws(BinaryDecodingError) -> T
    ) throws(BinaryDecodingError) -> T? {
        switch try reader.readByte() {
        case 0: return nil
        case 1: return try read(&reader)
        case let other: throw BinaryDecodingError(offset: reader.offset, reason: "bad optional marker \(other)")
        }
    }

    /// Lists may nest; the bound keeps hostile input from exhausting the stack.
    static let maximumDepth = 32

    static func decodeValue(_ reader: inout BinaryReader, depth: Int) throws(BinaryDecodingError) -> FieldValue {
        let tagOffset = reader.offset
        guard let tag = Tag(rawValue: try reader.readByte()) else {
            throw BinaryDecodingError(offset: tagOffset, reason: "unknown value tag")
        }
        switch tag {
        case .string: return .string(try reader.readString())
        case .int64: return .int64(try reader.readInt64())
        case .double: return .double(try reader.readDouble())
        case .timestamp: return .timestamp(Timestamp(millisecondsSince1970: try reader.readInt64()))
        case .bytes: return .bytes(try reader.readData())
        case .reference:
            let name = try reader.readString()
            let zoneName = try reader.readString()
            let owner = try reader.readString()
            let actionOffset = reader.offset
            guard let action = Reference.Action(rawValue: try reader.readString()) else {
                throw BinaryDecodingError(offset: actionOffset, reason: "unknown reference action")
            }
            let id = RecordID(recordName: name, zoneID: ZoneID(zoneName: zoneName, ownerName: owner))
            return .reference(Reference(recordID: id, action: action))
        case .asset:
            let checksum = try reader.readString()
            let size = try reader.readInt64()
            let url = try readOptional(&reader) { reader throws(BinaryDecodingError) in try reader.readString() }
            return .asset(AssetReference(checksum: checksum, size: size, downloadURL: url))
        case .location:
            let latitude = try reader.readDouble()
            let longitude = try reader.readDouble()
            var extras: [Double?] = []
            for _ in 0..<5 {
                extras.append(try readOptional(&reader) { reader throws(BinaryDecodingError) in try reader.readDouble() })
            }
            let timestamp = try readOptional(&reader) { reader throws(BinaryDecodingError) in
                Timestamp(millisecondsSince1970: try reader.readInt64())
            }
            return .location(
                Location(
                    latitude: latitude, longitude: longitude, horizontalAccuracy: extras[0],
                    verticalAccuracy: extras[1], altitude: extras[2], speed: extras[3], course: extras[4],
                    timestamp: timestamp))
        case .list:
            guard depth < maximumDepth else {
                throw BinaryDecodingError(offset: tagOffset, reason: "lists nested deeper than \(maximumDepth)")
            }
            let count = try reader.readLength()
            var values: [FieldValue] = []
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(try decodeValue(&reader, depth: depth + 1)) }
            return .list(values)
        case .encrypted: return .encrypted(try reader.readData())
        }
    }
}

/// The layouts met while decoding stored fields (a page of a change feed): the last one, tried
/// first, and the others by their names. Stored names are in canonical (sorted) order, so each
/// layout lists its fields sorted.
public struct DecodedLayouts {
    struct Known {
        let layout: RecordLayout
        let utf8Names: [[UInt8]]
    }

    var last: Known?
    private var byNames: [[String]: Known] = [:]

    /// No layouts yet; decoding adds them.
    public init() {}

    mutating func layout(of names: [String]) -> Known {
        if let known = byNames[names] {
            last = known
            return known
        }
        let known = Known(layout: RecordLayout(names), utf8Names: names.map { Array($0.utf8) })
        if byNames.count < 256 { byNames[names] = known }
        last = known
        return known
    }
}
