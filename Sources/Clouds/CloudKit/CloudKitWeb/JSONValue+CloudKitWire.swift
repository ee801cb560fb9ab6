import Foundation
import GatewayCore

/// JSON on CloudKit Web Services' wire: ``JSONValue`` read and written with
/// ``JSONNumberStyle/wholeDoublesAsIntegers`` (clients that write every number as a double mean
/// `35.0` to be `35`), failures as `CloudError` `invalidArguments`.
extension JSONValue {
    /// Parses a request or answer body.
    /// - Throws: `CloudError` `invalidArguments` naming what is wrong and at which byte.
    public static func parse(_ data: Data) throws(CloudError) -> JSONValue {
        do {
            return try parse(data, numbers: .wholeDoublesAsIntegers)
        } catch {
            throw CloudError(.invalidArguments, "the body is not valid JSON: \(error.reason) at byte \(error.offset)", underlying: error)
        }
    }

    /// The compact JSON text, with sorted keys so equal trees give equal bytes.
    /// - Throws: `CloudError` `invalidArguments` for a number JSON cannot hold (infinite, NaN).
    public func serialized() throws(CloudError) -> Data {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        try writeWire(into: &output)
        return Data(output)
    }

    /// Appends the compact wire text of the value.
    /// - Throws: `CloudError` `invalidArguments` for a number JSON cannot hold (infinite, NaN).
    func writeWire(into output: inout [UInt8]) throws(CloudError) {
        do {
            try writeCompact(into: &output, numbers: .wholeDoublesAsIntegers)
        } catch {
            throw CloudError(.invalidArguments, "JSON cannot hold the number \(error.value)")
        }
    }
}
