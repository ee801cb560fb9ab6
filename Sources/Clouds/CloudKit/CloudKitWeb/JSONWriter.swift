import Foundation
import GatewayCore

/// JSON text written member by member, for the large answers and requests (pages of records)
/// whose ``JSONValue`` tree would only be built to be written out and freed.
///
/// Commas are placed by the writer: call ``key(_:)`` before each member of an object, and the
/// value methods in order. Small parts can still be written from a tree with ``value(_:)``.
public struct JSONWriter: Sendable {
    private var output: [UInt8] = []
    /// Whether the next member or element follows another one.
    private var followsValue = false

    public init(capacity: Int = 4096) {
        output.reserveCapacity(capacity)
    }

    /// The text written so far.
    public var data: Data { Data(output) }

    /// The text written so far, as bytes.
    public var bytes: [UInt8] { output }

    public mutating func beginObject() {
        separate()
        output.append(UInt8(ascii: "{"))
        followsValue = false
    }

    public mutating func endObject() {
        output.append(UInt8(ascii: "}"))
        followsValue = true
    }

    public mutating func beginArray() {
        separate()
        output.append(UInt8(ascii: "["))
        followsValue = false
    }

    public mutating func endArray() {
        output.append(UInt8(ascii: "]"))
        followsValue = true
    }

    /// A member name; its value comes next.
    public mutating func key(_ name: String) {
        separate()
        JSONValue.writeString(name, into: &output)
        output.append(UInt8(ascii: ":"))
        followsValue = false
    }

    public mutating func string(_ text: String) {
        separate()
        JSONValue.writeString(text, into: &output)
        followsValue = true
    }

    /// `true` or `false`.
    public mutating func bool(_ flag: Bool) {
        separate()
        output.append(contentsOf: flag ? "true".utf8 : "false".utf8)
        followsValue = true
    }

    /// A JSON `null`.
    public mutating func null() {
        separate()
        output.append(contentsOf: "null".utf8)
        followsValue = true
    }

    /// A value given as a tree.
    /// - Throws: ``CloudError/Code/invalidArguments`` for a number JSON cannot hold.
    public mutating func value(_ value: JSONValue) throws(CloudError) {
        separate()
        try value.writeWire(into: &output)
        followsValue = true
    }

    /// A value written by another writer (one complete value).
    public mutating func value(_ written: JSONWriter) {
        separate()
        output.append(contentsOf: written.output)
        followsValue = true
    }

    private mutating func separate() {
        if followsValue { output.append(UInt8(ascii: ",")) }
    }
}
