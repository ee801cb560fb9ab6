import ArgumentParser
import GatewayKinds
import GatewayConfig

struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check the config, the cloud, every adapter's tables and every resolver and processor process without changing anything.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try options.load()
        try await GatewayStores.check(configuration, adapters: configuration.adapters, cloud: true)
        try await GatewayStores.checkResolvers(configuration)
        let names = configuration.adapters.map(\.name)
        Console.out(
            "\(configuration.file) is valid: \(configuration.cloud.kind) cloud, \(names.count) adapter(s)"
                + (names.isEmpty ? "" : " (\(names.joined(separator: ", ")))") + "\n")
    }
}
