import Foundation
import GatewayCore
import Logging

/// The adapters a session makes from the config's templates (``SharedAdapterTemplate``): one
/// per template and zone shared with the gateway's user, made when the share is accepted (at the
/// next ``refresh()``) and retired when it goes, with the store kept or deleted as `on_revoke`
/// says. A store that holds changes it could not send is never deleted. Which zones have adapters
/// is kept in `<state_dir>/shared-zones.json`, so a share that went while no gateway ran is
/// retired (and reported) by the next session as it would have been by a running one.
public actor SharedZoneAdapters {
    /// What one ``refresh()`` changed.
    public struct Change: Sendable {
        /// Adapters made for zones shared since the last look.
        public var added: [OpenedAdapter] = []
        /// Adapters retired because their zones are no longer shared, by name.
        public var retired: [String] = []
        /// Shared zones whose adapter could not be made (a template's keys that do not fit the
        /// zone, a store that cannot be created): the adapter's name and why. Tried again at the
        /// next refresh.
        public var failures: [(adapter: String, error: any Error)] = []

        /// Whether the set of adapters changed.
        public var isEmpty: Bool { added.isEmpty && retired.isEmpty }
    }

    private let templates: [SharedAdapterTemplate]
    private let configuration: GatewayConfiguration
    private let listing: (any SharedZoneListing)?
    private let logger: Logger
    private var opened: [(template: SharedAdapterTemplate, zone: ZoneID, adapter: OpenedAdapter)] = []
    /// Problems already logged, so a zone whose adapter cannot be made is reported once per cause.
    private var reported: Set<String> = []
    /// The template and zone of every adapter made, as the last session left them; read at the
    /// first refresh.
    private var known: Set<MadeZone>?

    /// One made adapter's template and zone, as `shared-zones.json` lists them.
    struct MadeZone: Hashable, Codable {
        var template: String
        var owner: String
        var zone: String
    }

    private var madeZonesPath: String {
        URL(fileURLWithPath: configuration.context.stateDirectory).appendingPathComponent("shared-zones.json").path
    }

    /// - Parameters:
    ///   - cloud: the session's cloud; it lists the shared zones when it is ``SharedZoneListing``.
    public init(configuration: GatewayConfiguration, cloud: any CloudDatabase, logger: Logger) {
        self.templates = configuration.sharedTemplates
        self.configuration = configuration
        self.listing = cloud as? any SharedZoneListing
        self.logger = logger
    }

    /// The adapters made so far, in the order they were made.
    public var adapters: [OpenedAdapter] { opened.map(\.adapter) }

    /// Whether `name` is an adapter this session syncs: a config's own adapter, or a made one
    /// not retired.
    public func isCurrent(_ name: String) -> Bool {
        configuration.adapter(named: name) != nil || opened.contains { $0.adapter.name == name }
    }

    /// The configuration of the made adapter `name`.
    public func configuration(of name: String) -> AdapterConfiguration? {
        opened.first { $0.adapter.name == name }?.adapter.configuration
    }

    /// Lists the zones shared with the user, makes an adapter for each new one a template takes,
    /// and retires those whose zones left. A listing that fails changes nothing.
    public func refresh() async -> Change {
        var change = Change()
        guard !templates.isEmpty else { return change }
        guard let listing else {
            report("no-listing", "the cloud cannot list the zones shared with this gateway's user; templates with database: shared make no adapters")
            return change
        }
        let zones: [ZoneID]
        do {
            zones = try await listing.sharedZones()
        } catch {
            logger.warning("cannot list the zones shared with this user; the shared adapters stay as they are", metadata: ["error": "\(error)"])
            return change
        }
        let previous = known ?? readMadeZones()
        var wanted: [(SharedAdapterTemplate, ZoneID)] = []
        for template in templates {
            for zone in zones.sorted(by: { ($0.ownerName, $0.zoneName) < ($1.ownerName, $1.zoneName) }) where template.takes(zone) {
                wanted.append((template, zone))
            }
        }
        for (template, zone) in wanted where !opened.contains(where: { $0.template.name == template.name && $0.zone == zone }) {
            do {
                let adapter = try template.adapter(for: zone)
                // A pattern without {zone} (or {owner}) would give two zones one store, and each
                // zone's records would land in the other's.
                let sharing = opened.first { $0.adapter.name == adapter.name || ($0.adapter.configuration.plan.storeIdentity != nil && $0.adapter.configuration.plan.storeIdentity == adapter.plan.storeIdentity) }
                    .map { "\($0.zone)" }
                    ?? configuration.adapters.first { $0.plan.storeIdentity != nil && $0.plan.storeIdentity == adapter.plan.storeIdentity }.map { "adapter \($0.name)" }
                if let sharing {
                    throw ConfigError(
                        .inconsistent,
                        "template \(template.name) gives zone \(zone) the same store as \(sharing); put {zone} and {owner} in its path, directory or schema")
                }
                try await GatewayStores.check(configuration, adapters: [adapter], cloud: false, beforeOpening: true)
                let made = try await GatewayStores.open([adapter])[0]
                opened.append((template, zone, made))
                change.added.append(made)
                // An adapter an earlier session already made is opened again, not joined.
                let metadata: Logger.Metadata = ["adapter": "\(made.name)", "zone": "\(zone.zoneName)", "owner": "\(zone.ownerName)"]
                if previous.contains(MadeZone(template: template.name, owner: zone.ownerName, zone: zone.zoneName)) {
                    logger.debug("shared zone opened", metadata: metadata)
                } else {
                    logger.info("shared zone joined", metadata: metadata)
                }
            } catch {
                change.failures.append(("\(template.name).\(SharedAdapterTemplate.safeName(zone.ownerName)).\(SharedAdapterTemplate.safeName(zone.zoneName))", error))
                report("\(template.name)\u{1F}\(zone)\u{1F}\(error)", "cannot make the adapter of a shared zone; trying again at the next sync", metadata: [
                    "template": "\(template.name)", "zone": "\(zone.zoneName)", "owner": "\(zone.ownerName)", "error": "\(error)",
                ])
            }
        }
        var kept: [(template: SharedAdapterTemplate, zone: ZoneID, adapter: OpenedAdapter)] = []
        for entry in opened {
            if wanted.contains(where: { $0.0.name == entry.template.name && $0.1 == entry.zone }) {
                kept.append(entry)
            } else {
                await retire(entry.adapter, policy: entry.template.settings.onRevoke, zone: entry.zone)
                change.retired.append(entry.adapter.name)
            }
        }
        // Zones an earlier session had adapters for and that are no longer shared: retired now.
        for made in previous where !wanted.contains(where: { $0.0.name == made.template && $0.1 == ZoneID(zoneName: made.zone, ownerName: made.owner) }) {
            guard let template = templates.first(where: { $0.name == made.template }) else { continue }
            let zone = ZoneID(zoneName: made.zone, ownerName: made.owner)
            guard !opened.contains(where: { $0.template.name == template.name && $0.zone == zone }) else { continue }
            do {
                let reopened = try await GatewayStores.open([try template.adapter(for: zone)])[0]
                await retire(reopened, policy: template.settings.onRevoke, zone: zone)
                change.retired.append(reopened.name)
            } catch {
                logger.warning(
                    "a shared zone left while no gateway ran; its store could not be opened to retire it",
                    metadata: ["template": "\(template.name)", "zone": "\(zone.zoneName)", "owner": "\(zone.ownerName)", "error": "\(error)"])
            }
        }
        opened = kept
        let current = Set(opened.map { MadeZone(template: $0.template.name, owner: $0.zone.ownerName, zone: $0.zone.zoneName) })
        if current != previous { writeMadeZones(current) }
        known = current
        return change
    }

    private func readMadeZones() -> Set<MadeZone> {
        guard let data = FileManager.default.contents(atPath: madeZonesPath) else { return [] }
        do {
            return Set(try JSONDecoder().decode([MadeZone].self, from: data))
        } catch {
            logger.warning("the list of shared zones the last session synced cannot be read; zones unshared meanwhile are not retired", metadata: [
                "file": "\(madeZonesPath)", "error": "\(error)",
            ])
            return []
        }
    }

    private func writeMadeZones(_ zones: Set<MadeZone>) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            let sorted = zones.sorted { ($0.template, $0.owner, $0.zone) < ($1.template, $1.owner, $1.zone) }
            try encoder.encode(sorted).write(to: URL(fileURLWithPath: madeZonesPath), options: .atomic)
        } catch {
            logger.warning("cannot record which shared zones have adapters; a share that goes while no gateway runs will not be retired", metadata: [
                "file": "\(madeZonesPath)", "error": "\(error)",
            ])
        }
    }

    /// Closes every made adapter (the session ends).
    public func closeAll() async {
        for entry in opened { await entry.adapter.adapter.close() }
        opened = []
    }

    private func retire(_ opened: OpenedAdapter, policy: RevokedSharePolicy, zone: ZoneID) async {
        let pending = (try? await opened.adapter.pendingChangeCount()) ?? -1
        await opened.adapter.close()
        var metadata: Logger.Metadata = ["adapter": "\(opened.name)", "zone": "\(zone.zoneName)", "owner": "\(zone.ownerName)"]
        guard policy == .delete else {
            if pending > 0 { metadata["unsent_changes"] = "\(pending)" }
            logger.notice("shared zone left; its adapter retired and its store is kept", metadata: metadata)
            return
        }
        guard pending == 0 else {
            metadata["unsent_changes"] = pending < 0 ? "unknown" : "\(pending)"
            logger.warning("shared zone left; its store holds changes it could not send, so it is kept despite on_revoke: delete", metadata: metadata)
            return
        }
        do {
            try await opened.configuration.plan.deleteStore()
            logger.notice("shared zone left; its adapter retired and its store deleted (on_revoke: delete)", metadata: metadata)
        } catch {
            metadata["error"] = "\(error)"
            logger.error("shared zone left; its store could not be deleted", metadata: metadata)
        }
    }

    private func report(_ key: String, _ message: Logger.Message, metadata: Logger.Metadata = [:]) {
        guard reported.insert(key).inserted else { return }
        logger.error(message, metadata: metadata)
    }
}
