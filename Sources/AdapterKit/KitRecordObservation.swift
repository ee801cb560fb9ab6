import Crypto
import Foundation
import GatewayCore

/// What the kit remembers of a record as the store held it, to tell a store's own edits from
/// what the kit wrote: the store's version when it keeps one, else a hash of the values.
enum KitRecordObservation {
    static func observed(_ entry: KitEntry) -> String? {
        if let version = entry.version { return "v:" + version }
        return entry.record.map(observed)
    }

    /// A hash of the record's type and non-null fields, independent of layout order.
    static func observed(_ record: Record) -> String {
        var hasher = SHA256()
        hasher.update(data: Data(record.recordType.utf8))
        var fields: [(String, FieldValue)] = []
        record.forEachField { fields.append(($0, $1)) }
        fields.sort { $0.0 < $1.0 }
        for (name, value) in fields {
            hasher.update(data: [0])
            hasher.update(data: Data(name.utf8))
            hasher.update(data: [0])
            hasher.update(data: FieldCoding.encode(value))
        }
        return "h:" + Data(hasher.finalize().prefix(16)).hexText
    }
}
