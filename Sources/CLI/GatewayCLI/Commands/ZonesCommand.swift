import ArgumentParser
import GatewayKinds
import GatewayConfig

struct ZonesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zones", abstract: "List the cloud's zones and the adapters bound to each.")

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
        let lines = zones.sorted { $0.zoneName < $1.zoneName }.map { zone in
            ZoneLine(
                zone: zone.zoneName, owner: zone.ownerName,
                adapters: configuration.adapters.filter { $0.settings.zoneID == zone }.map(\.name))
        }
        if json { return try Console.json(lines) }
        guard !lines.isEmpty else { return Console.out("The cloud has no zones yet; `gateway sync` creates them.\n") }
        var rows = [["zone", "adapters"]]
        for line in lines { rows.append([line.zone, line.adapters.isEmpty ? "-" : line.adapters.joined(separator: ", ")]) }
        Console.out(TextTable.render(rows))
    }
}
