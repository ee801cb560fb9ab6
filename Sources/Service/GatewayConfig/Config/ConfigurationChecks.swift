import GatewayCore

/// Checks across sections that no single section can make: unique names, merge resolvers that
/// exist, batch sizes the cloud accepts, encrypted fields with keys to encrypt them.
struct ConfigurationChecks {
    let configuration: GatewayConfiguration
    let registry: GatewayRegistry

    func run() throws {
        try checkNames()
        try checkBatchSizes()
        try checkMerge()
        try checkProcessors()
        try checkFieldSettings()
    }

    private func checkNames() throws {
        var names: [String: AdapterSettings] = [:]
        var stores: [String: String] = [:]
        for adapter in configuration.adapters {
            if let first = names[adapter.name] {
                throw adapter.settings.name.problem(
                    .duplicateName,
                    "adapter name '\(adapter.name)' is already used at line \(first.name.location?.line ?? 0); adapter names must be unique")
            }
            names[adapter.name] = adapter.settings
            if let store = adapter.plan.storeIdentity {
                if let other = stores[store] {
                    throw adapter.settings.name.problem(
                        .duplicateName, "adapters '\(other)' and '\(adapter.name)' use the same store; give each store one adapter")
                }
                stores[store] = adapter.name
            }
        }
    }

    private func checkBatchSizes() throws {
        let maximum = configuration.cloud.plan.limits.maxOperationsPerRequest
        let sizes = ([configuration.settings.batchSize] + configuration.adapters.map(\.settings.batchSize)).compactMap { $0 }
        for size in sizes where size.value > maximum {
            throw size.problem(.invalidValue, "\(size.value) is more than the cloud's max_operations (\(maximum))")
        }
    }

    /// Every `kind: process` entry names an entry of `processors:`, which this build can start.
    private func checkProcessors() throws {
        let processes = configuration.processorProcesses
        if processes.starter == nil, let first = processes.settings.values.min(by: { $0.name < $1.name }) {
            throw ConfigError(.invalidValue, "processor '\(first.name)': this build cannot start processor processes", at: first.location)
        }
        for adapter in configuration.adapters {
            for entry in adapter.settings.processors + adapter.plan.recordTypes.flatMap(\.processors) {
                guard case .process(let name) = entry, processes.settings[name.value] == nil else { continue }
                let known = processes.settings.keys.sorted()
                let list = known.isEmpty ? "the config has no processors: section" : "known: \(known.joined(separator: ", "))"
                throw name.problem(.invalidValue, "no processor named '\(name.value)' under processors:; \(list)\(KeySuggestion.hint(for: name.value, in: known))")
            }
        }
    }

    private func checkMerge() throws {
        if registry.resolverStarter == nil, let first = configuration.resolverProcesses.values.min(by: { $0.name < $1.name }) {
            throw ConfigError(.invalidValue, "resolver '\(first.name)': this build cannot start resolver processes", at: first.location)
        }
        for (name, _) in configuration.resolverProcesses where registry.resolvers[name] != nil {
            throw ConfigError(
                .duplicateName, "resolver '\(name)' is also registered in code; give the process another name",
                at: configuration.resolverProcesses[name]?.location)
        }
        let gatewayLevel = configuration.settings.merge
        try checkMergeLevel(gatewayLevel, effective: gatewayLevel.applied(to: MergeSettings()))
        for adapter in configuration.adapters {
            let options = configuration.syncOptions(for: adapter)
            try checkMergeLevel(adapter.settings.merge, effective: options.merge, inherited: gatewayLevel)
            for recordType in adapter.plan.recordTypes where !recordType.merge.isEmpty {
                try checkMergeLevel(
                    recordType.merge, effective: options.mergeSettings(for: recordType.recordType),
                    inherited: adapter.settings.merge.isEmpty ? gatewayLevel : adapter.settings.merge)
            }
        }
    }

    /// Checks one level's merge keys given what they amount to with the levels above.
    private func checkMergeLevel(_ level: MergeOverride, effective: MergeSettings, inherited: MergeOverride? = nil) throws {
        if let resolver = level.resolver {
            guard effective.policy == .custom else {
                throw resolver.problem(.inconsistent, "merge_resolver is used only with merge_policy: custom")
            }
            guard registry.resolvers[resolver.value] != nil || configuration.resolverProcesses[resolver.value] != nil else {
                let known = Set(registry.resolvers.keys).union(configuration.resolverProcesses.keys).sorted()
                let list = known.isEmpty ? "none is configured under resolvers: or registered in this build" : "known: \(known.joined(separator: ", "))"
                throw resolver.problem(
                    .invalidValue,
                    "no merge resolver named '\(resolver.value)'; \(list)\(KeySuggestion.hint(for: resolver.value, in: known))")
            }
        }
        if let policy = level.policy, policy.value == .custom, effective.resolverName == nil {
            throw policy.problem(.inconsistent, "merge_policy: custom needs merge_resolver: NAME, an entry of resolvers: or a resolver registered in code")
        }
    }

    private func checkFieldSettings() throws {
        for adapter in configuration.adapters {
            for recordType in adapter.plan.recordTypes {
                var seen: Set<String> = []
                for field in recordType.encrypted {
                    guard seen.insert(field.value).inserted else {
                        throw field.problem(.duplicateName, "field '\(field.value)' is listed twice")
                    }
                    if configuration.encryption.keys.isEmpty {
                        throw field.problem(
                            .inconsistent, "encrypted fields need a key: add encryption.keys (create one with `gateway keygen`)")
                    }
                }
            }
        }
        for adapter in configuration.adapters {
            for recordType in adapter.plan.recordTypes {
                for field in recordType.assets where recordType.encrypted.contains(where: { $0.value == field.value }) {
                    throw field.problem(
                        .inconsistent, "field '\(field.value)' is encrypted, and encrypted fields travel inline as ciphertext; remove it from one list")
                }
            }
        }
    }
}
