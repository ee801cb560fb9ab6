import ArgumentParser
import Foundation
import GatewayConfig

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init", abstract: "Write a starter config (embedded cloud, one SQLite adapter to fill in).")

    @OptionGroup var options: ConfigOptions

    @Flag(name: .long, help: "Replace an existing file.")
    var force = false

    func run() async throws {
        if !force, FileManager.default.fileExists(atPath: options.config) {
            throw GatewayError(.fileExists, "\(options.config) already exists; pass --force to replace it")
        }
        do {
            try Data(StarterConfig.text.utf8).write(to: URL(fileURLWithPath: options.config), options: .atomic)
        } catch {
            throw GatewayError(.stateUnavailable, "cannot write \(options.config): \(error.localizedDescription)")
        }
        Console.out("wrote \(options.config); add your adapters, then run `gateway validate --config \(options.config)`\n")
    }
}
