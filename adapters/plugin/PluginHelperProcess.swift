import AdapterKit
import Foundation
import GatewayCore
import Logging
import Synchronization

/// A helper process the gateway asks questions (a resolver or a record processor): any executable
/// speaking the plugin protocol's framing, greeted with `hello` and a `role`.
///
/// It is started on the first request and kept running; requests wait their turn. A process
/// that crashes, times out or breaks the protocol fails the request in flight and is replaced on
/// the next one; an error the process reports itself (`{"error": …}`) leaves it running.
final class PluginHelperProcess: Sendable {
    /// `resolver` or `processor`: sent in the handshake, and used in logs.
    let role: String
    /// The entry's name in the config.
    let name: String
    let configuration: PluginConfiguration
    private let logger: Logger
    private let gate = KitGate()
    private let running = Mutex<PluginProcess?>(nil)

    init(role: String, name: String, configuration: PluginConfiguration, logger: Logger) {
        self.role = role
        self.name = name
        self.configuration = configuration
        self.logger = logger
    }

    /// The answer to `method` with `params`, from the running process (started if needed).
    /// - Throws: ``PluginError`` (with the exit status when the process went away).
    func request(_ method: String, params: JSONValue) async throws -> JSONValue {
        try await gate.run {
            let process = try await started()
            do {
                return try await process.request(method, params: params, timeout: configuration.requestTimeout)
            } catch let error as PluginError where error.code == .pluginReportedError {
                throw error
            } catch {
                // Anything else leaves the process in an unknown state: a new one serves the next request.
                running.withLock { if $0 === process { $0 = nil } }
                let described = await Self.describe(error, process: process)
                await process.stop(grace: .milliseconds(200))
                logger.warning("\(described)", metadata: [role: .string(name)])
                throw described
            }
        }
    }

    /// A malformed-answer failure naming the process.
    func malformed(_ detail: String) -> PluginError {
        PluginError(.malformedMessage, adapter: configuration.adapterName, plugin: configuration.displayName, detail)
    }

    /// Starts the process and greets it, leaving it running (``close()`` stops it).
    /// - Throws: why it cannot start or answer the handshake.
    func checkStarts() async throws {
        _ = try await gate.run { try await started() }
    }

    /// Stops the process, if it runs.
    func close() async {
        let process = running.withLock { running in
            defer { running = nil }
            return running
        }
        await process?.stop()
    }

    /// The running process, started (and greeted) if none runs or the last one went away.
    private func started() async throws -> PluginProcess {
        if let process = running.withLock({ $0 }) {
            guard process.hasFailed || process.hasExited else { return process }
            running.withLock { if $0 === process { $0 = nil } }
            await process.stop(grace: .zero)
        }
        let process = try await PluginProcess.start(configuration, logger: logger)
        do {
            let hello: JSONValue = .object([
                "protocol": .integer(PluginMessages.protocolVersion), "gateway": "sync-gateway", "role": .string(role),
                role: .string(name), "settings": configuration.settings,
            ])
            let answer = try await process.request("hello", params: hello, timeout: configuration.startTimeout)
            guard let version = answer["protocol"]?.int64Value, version == PluginMessages.protocolVersion else {
                throw PluginError(
                    .protocolMismatch, adapter: configuration.adapterName, plugin: configuration.displayName,
                    "answered hello without protocol version \(PluginMessages.protocolVersion)")
            }
        } catch {
            let described = await Self.describe(error, process: process)
            await process.stop(grace: .milliseconds(200))
            throw described
        }
        running.withLock { $0 = process }
        logger.info("\(role) started", metadata: [role: .string(name), "pid": "\(process.pid)"])
        return process
    }

    /// `error`, with the process's exit status when it is the plugin's failure.
    private static func describe(_ error: any Error, process: PluginProcess) async -> any Error {
        guard let failure = error as? PluginError else { return error }
        return await process.failureWithStatus(failure)
    }
}
