import ArgumentParser
import GatewayKinds
import GatewayService

struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check the config, the cloud and every adapter's tables without changing anything.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try options.load()
        do {
            try await configuration.cloud.plan.check()
        } catch let error as ConfigError {
            throw error
        } catch let error as GatewayError {
            throw error
        } catch {
            throw GatewayError(.cloudUnavailable, "the \(configuration.cloud.kind) cloud: \(error)", underlying: error)
        }
        for adapter in configuration.adapters {
            do {
                try await adapter.plan.check()
            } catch let error as ConfigError {
                throw error
            } catch {
                throw GatewayError(.storeUnavailable, "adapter \(adapter.name): \(error)", underlying: error)
            }
        }
        let names = configuration.adapters.map(\.name)
        Console.out(
            "\(configuration.file) is valid: \(configuration.cloud.kind) cloud, \(names.count) adapter(s)"
                + (names.isEmpty ? "" : " (\(names.joined(separator: ", ")))") + "\n")
    }
}
