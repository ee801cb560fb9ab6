import PostgresNIO

/// A one-dimensional `text[]` parameter in PostgreSQL's binary array format, whose elements may be
/// SQL NULL (PostgresNIO's arrays have no optional elements).
///
/// A downloaded page is bound as one of these per column and read with `unnest`: the texts go
/// into the wire buffer as they are, with no JSON to escape on this side or to parse on the server.
struct PostgresTextArray: PostgresNonThrowingEncodable, Sendable {
    private(set) var count = 0
    private var hasNull = false
    /// Each element as its length (-1 for NULL) and its UTF-8 bytes.
    private var elements: ByteBuffer

    init(reservingBytes capacity: Int = 0) {
        elements = ByteBufferAllocator().buffer(capacity: capacity)
    }

    mutating func append(_ text: String?) {
        count += 1
        guard let text else {
            hasNull = true
            elements.writeInteger(-1, as: Int32.self)
            return
        }
        let lengthIndex = elements.writerIndex
        elements.writeInteger(0, as: Int32.self)
        let written = elements.writeString(text)
        elements.setInteger(Int32(written), at: lengthIndex)
    }

    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(count == 0 ? 0 : 1, as: Int32.self)  // dimensions
        buffer.writeInteger(hasNull ? 1 : 0, as: Int32.self)
        buffer.writeInteger(PostgresDataType.text.rawValue)  // element type
        guard count > 0 else { return }
        buffer.writeInteger(Int32(count))  // length of the one dimension
        buffer.writeInteger(1, as: Int32.self)  // its lower bound
        buffer.writeImmutableBuffer(elements)
    }
}
