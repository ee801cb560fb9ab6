import Crypto
import Foundation
import GatewayCore

/// What the kit remembers of a record as the store held it, to tell a store's own edits from
/// what the kit wrote: the store's version when it keeps one, else a hash of the values.
enum KitRecordObservation {
    static func observed(_ entry: KitEntry) -> String? {
        if let version = entry.version { return observed(version: version) }
        return entry.record.map(observed)
    }

    /// What the kit remembers of a record the store versions.
    static func observed(version: String) -> String { "v:" + version }

    /// A hash of the record's type and non-null fields, independent of layout order (the field
    /// encoding writes fields in the layout's canonical, sorted order).
    static func observed(_ record: Record) -> String {
        var hasher = SHA256()
        hasher.update(data: Data(record.recordType.utf8))
        hasher.update(data: [0])
        hasher.update(data: FieldCoding.encode(record))
        return "h:" + Data(hasher.finalize().prefix(16)).hexText
    }
}
