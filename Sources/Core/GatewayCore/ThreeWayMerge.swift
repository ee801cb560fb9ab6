/// Applies a ``MergeSettings`` to a conflict.
package enum ThreeWayMerge {
    /// The resolution of `conflict` under `settings`, normalised: values equal to one side's are
    /// reported as that side.
    package static func resolve(
        _ conflict: ConflictContext, settings: MergeSettings, resolvers: [String: any ConflictResolver]
    ) throws(SyncError) -> ConflictResolution {
        let raw: ConflictResolution
        switch settings.policy {
        case .server:
            raw = .server
        case .client:
            // A local version that is an older state of the server's is no edit to keep.
            raw = conflict.locallySuperseded ? .server : .local
        case .merge:
            raw = merge(conflict, prefers: settings.prefers)
        case .custom:
            guard let name = settings.resolverName, let resolver = resolvers[name] else {
                throw SyncError(
                    .unknownResolver,
                    "merge policy custom names resolver \(settings.resolverName.map { "'\($0)'" } ?? "(none)"), which is not registered")
            }
            raw = resolver.resolve(conflict)
        }
        return normalised(raw, of: conflict)
    }

    /// `resolution` with values equal to one side's reported as that side.
    package static func normalised(_ resolution: ConflictResolution, of conflict: ConflictContext) -> ConflictResolution {
        guard case .fields(let fields) = resolution else { return resolution }
        if let server = conflict.server, server.fields == fields { return .server }
        if let local = conflict.local, local.fields == fields { return .local }
        return resolution
    }

    /// What makes `resolution` unfit for `conflict`, or `nil` when it fits: its values must name
    /// only fields the conflict holds (either side's, or the ancestor's), each of the type one
    /// side holds there. A resolver outside the gateway (a process) is checked with this: its
    /// answer is never a guess the gateway writes into a store.
    package static func problem(with resolution: ConflictResolution, of conflict: ConflictContext) -> String? {
        guard case .fields(let fields) = resolution else { return nil }
        let names = conflict.fieldNames
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard names.contains(name) else { return "field '\(name)', which neither side holds" }
            let types = [conflict.local?[name], conflict.server?[name]].compactMap { $0.map(kind) }
            if !types.isEmpty, !types.contains(kind(of: value)) {
                return "field '\(name)' of type \(kind(of: value)), where the record holds \(Set(types).sorted().joined(separator: " or "))"
            }
        }
        return nil
    }

    /// The name of a value's type, for ``problem(with:of:)``.
    private static func kind(of value: FieldValue) -> String {
        switch value {
        case .string: "string"
        case .int64: "int64"
        case .double: "double"
        case .timestamp: "timestamp"
        case .bytes: "bytes"
        case .reference: "reference"
        case .asset: "asset"
        case .location: "location"
        case .list: "list"
        case .encrypted: "encrypted"
        }
    }

    /// A record both sides hold without a common ancestor: neither side's values are an edit of
    /// the other's, so the fields are merged (a field only one side holds is kept) and a field
    /// both hold with different values, or a deletion met by values, follows `prefers`.
    package static func join(_ conflict: ConflictContext, prefers: JoinPreference) -> ConflictResolution {
        switch (conflict.local, conflict.server) {
        case (.some, nil):
            return prefers == .store ? .local : .server
        case (nil, _):
            return .server
        case (.some(let local), .some(let server)):
            // `store` is the operator saying the store is the truth: even values the zone
            // replaced since win, so superseded values do not count.
            let merged = merge(conflict, prefers: prefers == .store ? .client : .server, honouringSuperseded: prefers != .store)
            guard case .fields(let fields) = merged else { return merged }
            if server.fields == fields { return .server }
            if local.fields == fields { return .local }
            return merged
        }
    }

    /// Field-level three-way merge. An edit beats a delete and brings the record back whole (as
    /// SyncKit and Core Data do: a record kept with only its edited fields would break a store's
    /// NOT NULL columns); a field changed on one side takes that side's value; a field changed on
    /// both sides to different values takes `prefers`, unless the local value is one the server's
    /// version superseded (then the server's wins; `honouringSuperseded: false` turns that off).
    package static func merge(_ conflict: ConflictContext, prefers: MergePreference, honouringSuperseded: Bool = true) -> ConflictResolution {
        switch (conflict.local, conflict.server) {
        case (nil, nil):
            return .server
        case (nil, .some):
            return conflict.serverEdited ? .server : .local
        case (.some, nil):
            return conflict.localEdited ? .local : .server
        case (.some(let local), .some(let server)):
            var merged: [String: FieldValue] = [:]
            for field in conflict.fieldNames {
                let localValue = local[field]
                let serverValue = server[field]
                let chosen: FieldValue?
                if localValue == serverValue || !conflict.changedLocally(field) {
                    chosen = serverValue
                } else if !conflict.changedOnServer(field) {
                    chosen = localValue
                } else if honouringSuperseded && conflict.supersededLocally(field) {
                    // The zone held the local value before the server's replaced it.
                    chosen = serverValue
                } else {
                    chosen = prefers == .server ? serverValue : localValue
                }
                if let chosen { merged[field] = chosen }
            }
            return .fields(merged)
        }
    }
}
