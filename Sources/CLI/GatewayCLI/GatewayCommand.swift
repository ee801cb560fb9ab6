import ArgumentParser
import Foundation
import GatewayCore
import GatewayKinds
import GatewayConfig
import SQLiteSupport

/// The `gateway` command line, as a library so that a custom build can register its own kinds
/// and run the same commands:
/// ```swift
/// var registry = GatewayRegistry.builtIn
/// registry.register(MyAdapterKind())
/// await GatewayCLI.main(registry: registry)
/// ```
public enum GatewayCLI {
    /// The kinds and resolvers the commands load configs with.
    @TaskLocal static var registry = GatewayRegistry.builtIn

    /// Parses the process's arguments, runs the command and exits with its status. It owns the
    /// process: SQLite's process-wide settings (``SQLiteProcessSettings``) are applied first.
    public static func main(registry: GatewayRegistry = .builtIn, arguments: [String]? = nil) async -> Never {
        SQLiteProcessSettings.apply()
        let status = await $registry.withValue(registry) { await run(arguments) }
        Foundation.exit(status)
    }

    static func run(_ arguments: [String]?) async -> Int32 {
        do {
            var command = try await GatewayCommand.asyncParseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return ExitStatus.ok
        } catch {
            let code = ExitStatus.code(for: error, command: GatewayCommand.self)
            if let message = ExitStatus.message(for: error, command: GatewayCommand.self) {
                let stream = code == 0 ? FileHandle.standardOutput : FileHandle.standardError
                stream.write(Data((message + "\n").utf8))
            }
            return code
        }
    }
}

/// The `gateway` command. Exit codes (DESIGN §9): 0 ok, 1 sync failed, 2 usage or config
/// error, 3 `status` found an unreadable store, 75 already syncing.
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: "Keeps local stores in sync with a CloudKit-style record store.",
        discussion: """
            Exit codes: 0 ok, 1 sync failed (or status --fail-on-changes found changes), 2 usage or configuration error, \
            3 status could not read a store, 75 already syncing.
            """,
        version: GatewayVersion.current,
        subcommands: [
            RunCommand.self, SyncCommand.self, StatusCommand.self, ValidateCommand.self, InitCommand.self, KeygenCommand.self,
            ResetCommand.self, RetryCommand.self, ZonesCommand.self, CloudCommand.self, CheckAdapterCommand.self, ShareCommand.self,
        ])
}

/// Maps errors to the documented exit codes and messages.
enum ExitStatus {
    static let ok: Int32 = 0
    static let syncFailed: Int32 = 1
    static let usage: Int32 = 2
    /// `gateway status`: some adapter's store could not be opened or read.
    static let unhealthy: Int32 = 3
    static let alreadySyncing: Int32 = 75

    static func code(for error: any Error, command: GatewayCommand.Type) -> Int32 {
        switch error {
        case let exit as ExitCode: return exit.rawValue
        case is ConfigError: return usage
        case let error as GatewayError:
            switch error.code {
            case .alreadyRunning: return alreadySyncing
            case .unknownAdapter, .fileExists: return usage
            default: return syncFailed
            }
        case let error as SyncError:
            return error.code == .alreadySyncing ? alreadySyncing : syncFailed
        default:
            let parserCode = command.exitCode(for: error).rawValue
            // ArgumentParser reports usage errors as EX_USAGE (64); the gateway's contract is 2.
            return parserCode == ExitCode.validationFailure.rawValue ? usage : parserCode
        }
    }

    static func message(for error: any Error, command: GatewayCommand.Type) -> String? {
        switch error {
        case is ExitCode: return nil
        case let error as ConfigError: return "error: \(error)"
        case let error as GatewayError: return "error: \(error.message)"
        case let error as SyncError: return "error: \(error)"
        default:
            let message = command.fullMessage(for: error)
            return message.isEmpty ? nil : message
        }
    }
}

/// `--config PATH`, shared by every subcommand.
struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "The configuration file.")
    var config = "config.yaml"

    func load() throws -> GatewayConfiguration {
        try GatewayConfiguration.load(file: config, registry: GatewayCLI.registry)
    }
}

/// Writing to standard output and standard error.
enum Console {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func err(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func json(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        out(String(decoding: try encoder.encode(value), as: UTF8.self) + "\n")
    }
}
