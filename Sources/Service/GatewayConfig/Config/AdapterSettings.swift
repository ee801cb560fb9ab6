import GatewayCore

/// The keys every adapter entry has, whatever its kind: `name`, `kind`, `zone`, the merge keys,
/// `batch_size` and `on_zone_deleted`. The kind reads its own keys from the same entry.
public struct AdapterSettings: Sendable, Decodable {
    /// `name`: unique in the config; letters, digits, `-`, `_` and `.`.
    public var name: Located<String>
    /// `kind`: which registered ``AdapterKind`` handles the entry (`sqlite`, ...).
    public var kind: Located<String>
    /// `zone`: the record zone the adapter syncs with. For a template (`database: shared`),
    /// the name of the shared zones it takes, `*` (the default) for every one.
    public var zone: Located<String>
    /// `database`: `private` (the default), or `shared` for a template that makes an adapter
    /// for each zone shared with the gateway's user (``SharedAdapterTemplate``).
    public var database: AdapterDatabase
    /// `on_revoke`: what a template's adapter does with its store when the zone stops being
    /// shared with the gateway's user; `keep` by default.
    public var onRevoke: RevokedSharePolicy
    /// The owner of the shared zone this adapter was made for; `nil` for the user's own zone.
    /// Set by ``SharedAdapterTemplate``, never read from the file.
    public var sharedBy: String?
    /// Merge keys that override the gateway's.
    public var merge: MergeOverride
    /// `batch_size`: overrides the gateway's.
    public var batchSize: Located<Int>?
    /// `fetch_limit`: how many changes one download page of this adapter asks for; overrides the
    /// gateway's and the kind's (``AdapterPlan/largestDownloadPage``).
    public var fetchLimit: Located<Int>?
    /// `on_zone_deleted`: overrides the gateway's.
    public var onZoneDeleted: ZoneDeletedPolicy?
    /// `force_data`: overrides the gateway's.
    public var forceData: Bool?
    /// `join_prefers`: overrides the gateway's; `gateway sync --store-wins` sets it to `store`
    /// for one sync.
    public var joinPrefers: JoinPreference?
    /// `processors`: processes that change every record type's records between the store and
    /// the zone, after each record type's own on the way out (`kind: process` only: the built-in
    /// kinds name a store's fields, so they sit on a table or record type entry).
    public var processors: [ProcessorSettings]

    enum CodingKeys: String, CodingKey {
        case name, kind, zone, batchSize = "batch_size", fetchLimit = "fetch_limit", onZoneDeleted = "on_zone_deleted", forceData = "force_data"
        case joinPrefers = "join_prefers", processors, database, onRevoke = "on_revoke"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(Located<String>.self, forKey: .name)
        guard ConfigName.isValid(name.value) else {
            throw name.problem(.invalidValue, "adapter names use 1 to 64 letters, digits, '-', '_' or '.'")
        }
        kind = try container.decode(Located<String>.self, forKey: .kind)
        database = try container.decodeIfPresent(AdapterDatabase.self, forKey: .database) ?? .private
        onRevoke = try container.decodeIfPresent(RevokedSharePolicy.self, forKey: .onRevoke) ?? .keep
        if database == .shared {
            zone = try container.decodeIfPresent(Located<String>.self, forKey: .zone) ?? Located("*")
        } else {
            // A template whose `database` key is misspelt has no zone: the typo is the better report.
            if !container.contains(.zone), let node = decoder as? ConfigNodeDecoder, let typo = node.session.misspelling(of: "database", at: node.path) {
                throw typo
            }
            zone = try container.decode(Located<String>.self, forKey: .zone)
            if container.contains(.onRevoke) {
                throw decoder.configProblem(.inconsistent, "on_revoke is for templates of shared zones; add database: shared or remove it")
            }
        }
        if zone.value != "*" || database != .shared, let problem = ZoneNameRules.problem(with: zone.value) { throw zone.problem(.invalidValue, problem) }
        merge = try MergeOverride(from: decoder)
        batchSize = try container.decodeIfPresent(Located<Int>.self, forKey: .batchSize)
        if let batchSize, batchSize.value < 1 { throw batchSize.problem(.invalidValue, "must be at least 1") }
        fetchLimit = try container.decodeIfPresent(Located<Int>.self, forKey: .fetchLimit)
        if let fetchLimit, fetchLimit.value < 1 { throw fetchLimit.problem(.invalidValue, "must be at least 1") }
        onZoneDeleted = try container.decodeIfPresent(ZoneDeletedPolicy.self, forKey: .onZoneDeleted)
        forceData = try container.decodeIfPresent(Bool.self, forKey: .forceData)
        joinPrefers = try container.decodeIfPresent(JoinPreference.self, forKey: .joinPrefers)
        processors = try container.decodeIfPresent([ProcessorSettings].self, forKey: .processors) ?? []
        for processor in processors {
            if let field = processor.storeField {
                throw field.problem(
                    .unsupported, "an adapter's own processors are of kind: process; put rename and file_reference on the table or record type that holds '\(field.value)'")
            }
        }
    }

    public var zoneID: ZoneID { ZoneID(zoneName: zone.value, ownerName: sharedBy ?? ZoneID.defaultOwnerName) }
}

/// Which of the gateway user's databases an adapter entry syncs with.
public enum AdapterDatabase: String, ConfigChoice {
    /// The user's own zone named by `zone`.
    case `private`
    /// Every zone shared with the user (or those named by `zone`): the entry is a template.
    case shared
}

/// What a shared zone's adapter does with its store when the share goes away.
public enum RevokedSharePolicy: String, ConfigChoice {
    /// Keep the store as it is, changes not sent included.
    case keep
    /// Delete the store, unless it holds changes it could not send (then it is kept and the log says so).
    case delete
}

/// Settings of one record type that every kind shares, read from the kind's table (or record
/// type) entry: merge overrides, `encrypted`, `assets` and `force_data`.
public struct RecordTypeSettings: Sendable, Decodable {
    /// The record type; set by the kind, which knows its default (the table name, ...).
    public var recordType: String
    /// Merge keys that override the adapter's for this record type.
    public var merge: MergeOverride
    /// `encrypted`: fields encrypted before upload (sent inline as ciphertext, never as assets).
    public var encrypted: [Located<String>]
    /// `assets`: binary fields uploaded as assets even under `force_data`.
    public var assets: [Located<String>]
    /// `force_data`: send this record type's binary fields inline instead of as assets.
    public var forceData: Bool?
    /// `processors`: how fields change between the store and the zone, in order on the way out.
    public var processors: [ProcessorSettings]
    /// Where the entry is.
    public var location: ConfigLocation?
    /// The entry's key path.
    public var path: String

    enum CodingKeys: String, CodingKey {
        case encrypted, assets, forceData = "force_data", processors
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        recordType = ""
        merge = try MergeOverride(from: decoder)
        encrypted = try container.decodeIfPresent([Located<String>].self, forKey: .encrypted) ?? []
        assets = try container.decodeIfPresent([Located<String>].self, forKey: .assets) ?? []
        forceData = try container.decodeIfPresent(Bool.self, forKey: .forceData)
        processors = try container.decodeIfPresent([ProcessorSettings].self, forKey: .processors) ?? []
        location = decoder.configLocation
        var processed: Set<String> = []
        for processor in processors {
            guard let field = processor.storeField else { continue }
            guard processed.insert(field.value).inserted else {
                throw field.problem(.inconsistent, "field '\(field.value)' has two processors; give each field one")
            }
            guard case .rename(let from, let to) = processor else { continue }
            // Encryption and assets work on the zone's form: naming either side of a rename
            // would encrypt nothing, silently.
            for named in encrypted + assets where named.value == from.value || named.value == to.value {
                throw named.problem(.inconsistent, "field '\(named.value)' is renamed by a processor; encrypting or sending a renamed field as an asset is not supported")
            }
        }
        path = decoder.configPath
    }

    public init(recordType: String, merge: MergeOverride = MergeOverride()) {
        self.recordType = recordType
        self.merge = merge
        encrypted = []
        assets = []
        forceData = nil
        processors = []
        location = nil
        path = ""
    }

    /// Fails unless every `encrypted` and `assets` column is synced under the entry's
    /// `include`/`exclude` lists (for kinds that map columns to fields).
    public func requireSynced(include: [String]?, exclude: [String]) throws {
        for field in encrypted + assets {
            if exclude.contains(field.value) {
                throw field.problem(.inconsistent, "column '\(field.value)' is excluded, so it is never synced; remove it from one list")
            }
            if let include, !include.contains(field.value) {
                throw field.problem(.inconsistent, "column '\(field.value)' is not in 'include', so it is never synced; add it there")
            }
        }
    }
}

/// What CloudKit accepts as a zone name that can sync.
public enum ZoneNameRules {
    /// Why CloudKit would reject `name`, or `nil` when it is fine.
    public static func problem(with name: String) -> String? {
        if name.isEmpty { return "a zone name must not be empty" }
        if name.utf8.count > 255 { return "a zone name is at most 255 bytes" }
        if name == "_defaultZone" {
            return "the default zone has no change feed and cannot sync; name a custom zone such as NotesZone"
        }
        if name.hasPrefix("_") { return "zone names starting with '_' are reserved by CloudKit" }
        let allowed = name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" || $0 == ".")
        }
        if !allowed { return "zone names use ASCII letters, digits, '_', '-' and '.'" }
        return nil
    }
}
