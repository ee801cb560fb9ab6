import ArgumentParser
import GatewayKinds
import GatewayConfig
import GatewayCore

struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check the config, the cloud, every adapter's tables and every resolver and processor process without changing anything.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try options.load()
        try KeyFingerprints.check(configuration)
        try await GatewayStores.check(configuration, adapters: configuration.adapters, cloud: true)
        try await GatewayStores.checkResolvers(configuration)
        // Templates are checked with the zones shared with the user now: their stores exist, or
        // their seed: makes them.
        let made = configuration.sharedTemplates.isEmpty ? [] : try await StatusCommand.sharedAdapters(configuration)
        try await GatewayStores.check(configuration, adapters: made, cloud: false)
        // And as they would be made for a zone shared later: its store does not exist yet, so the
        // template's seed: must make one that fits its tables.
        let sample = try configuration.sharedTemplates.map { try $0.adapter(for: ZoneID(zoneName: "NewZone", ownerName: "new-owner")) }
        try await GatewayStores.check(configuration, adapters: sample, cloud: false)
        let names = (configuration.adapters + made).map(\.name)
        let templates = configuration.sharedTemplates.map(\.name)
        Console.out(
            "\(configuration.file) is valid: \(configuration.cloud.kind) cloud, \(names.count) adapter(s)"
                + (names.isEmpty ? "" : " (\(names.joined(separator: ", ")))")
                + (templates.isEmpty ? "" : ", \(templates.count) template(s) for shared zones (\(templates.joined(separator: ", ")))") + "\n")
    }
}
