import GatewayConfig
import GatewayCore
import Logging

/// Starts the config's `processors:` as ``PluginRecordProcessor``s: processes speaking the
/// plugin protocol's framing with the `process` method.
public struct PluginProcessorStarter: ProcessorProcessStarter {
    public init() {}

    public func check(_ settings: ProcessSettings) async throws {
        let processor = make(settings)
        do {
            try await processor.checkStarts()
        } catch {
            await processor.close()
            throw error
        }
        await processor.close()
    }

    public func processor(for settings: ProcessSettings) -> any RecordProcessor {
        make(settings)
    }

    private func make(_ settings: ProcessSettings) -> PluginRecordProcessor {
        PluginRecordProcessor(
            name: settings.name, configuration: PluginConfiguration(helper: settings, described: "processor"), logger: Logger(label: "gateway.processor"))
    }
}

extension PluginConfiguration {
    /// The configuration of a helper process (a resolver or a processor) from its config entry;
    /// `described` names it in messages ("resolver NAME").
    init(helper settings: ProcessSettings, described: String) {
        self.init(
            adapterName: "\(described) \(settings.name)", zoneID: ZoneID(zoneName: described), command: settings.command, arguments: settings.arguments,
            environment: settings.environment, workingDirectory: settings.workingDirectory, settings: settings.settings,
            startTimeout: settings.startTimeout, requestTimeout: settings.requestTimeout, maxRecordsPerMessage: settings.maxItemsPerMessage)
    }
}
