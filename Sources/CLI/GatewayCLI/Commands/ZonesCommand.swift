import ArgumentParser
import GatewayKinds
import GatewayConfig
import GatewayCore

struct ZonesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zones", abstract: "List the cloud's zones (the user's own, then those shared with it) and the adapters bound to each.")

    @OptionGroup var options: ConfigOptions

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    struct ZoneLine: Encodable {
        var zone: String
        var owner: String
        var adapters: [String]
    }

    func run() async throws {
        let configuration = try options.load()
        try GatewayStores.prepareStateDirectory(configuration)
        let cloud = try await GatewayStores.openCloud(configuration)
        let zones = try await cloud.zones()
        let lines = zones.sorted { ($0.ownerName == ZoneID.defaultOwnerName ? "" : "~" + $0.ownerName, $0.zoneName) < ($1.ownerName == ZoneID.defaultOwnerName ? "" : "~" + $1.ownerName, $1.zoneName) }.map { zone in
            let shared = zone.ownerName == ZoneID.defaultOwnerName ? [] : configuration.sharedTemplates.filter { $0.takes(zone) }.compactMap { try? $0.adapter(for: zone).name }
            return ZoneLine(
                zone: zone.zoneName, owner: zone.ownerName,
                adapters: configuration.adapters.filter { $0.settings.zoneID == zone }.map(\.name) + shared)
        }
        if json { return try Console.json(lines) }
        guard !lines.isEmpty else { return Console.out("The cloud has no zones yet; `gateway sync` creates them.\n") }
        var rows = [["zone", "owner", "adapters"]]
        for line in lines {
            let owner = line.owner == ZoneID.defaultOwnerName ? "(this user)" : line.owner
            rows.append([line.zone, owner, line.adapters.isEmpty ? "-" : line.adapters.joined(separator: ", ")])
        }
        Console.out(TextTable.render(rows))
    }
}
