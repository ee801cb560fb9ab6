import Foundation

/// A form the status page posts (`application/x-www-form-urlencoded`), parsed strictly: a body
/// over ``maximumBytes``, another content type, bad percent-encoding or a repeated field is an
/// error, and the request changes nothing.
struct ControlForm: Sendable, Equatable {
    /// Far above what the page's forms send (a token and an adapter name).
    static let maximumBytes = 16 * 1024

    enum Problem: Error, Equatable {
        case notAForm
        case malformed(String)
    }

    let fields: [String: String]

    subscript(name: String) -> String? { fields[name] }

    init(contentType: String?, body: String) throws(Problem) {
        guard let contentType, contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            == "application/x-www-form-urlencoded"
        else { throw .notAForm }
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), !name.isEmpty else { throw .malformed("a field name is not valid form encoding") }
            guard let value = Self.decode(parts.count > 1 ? parts[1] : "") else {
                throw .malformed("the field \(name.prefix(40)) is not valid form encoding")
            }
            guard fields[name] == nil else { throw .malformed("the field \(name.prefix(40)) is given twice") }
            fields[name] = value
        }
        self.fields = fields
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
