import AdapterKit
import Foundation
import GatewayCore
import GatewayConfig

/// `kind: records-file`: keys `path` (the JSON file, created on the first write) and
/// `record_types` (names of the types it holds).
struct RecordsFileKind: AdapterKind {
    let name = "records-file"

    enum Keys: String, CodingKey { case path, recordTypes = "record_types" }

    func decodePlan(settings: AdapterSettings, from decoder: any Decoder, context: ConfigContext) throws -> any AdapterPlan {
        let keys = try decoder.container(keyedBy: Keys.self)
        let path = try keys.decode(Located<String>.self, forKey: .path)
        let types = try keys.decode(Located<[String]>.self, forKey: .recordTypes)
        guard !types.value.isEmpty else { throw types.problem(.invalidValue, "must name at least one record type") }
        return Plan(
            name: settings.name.value, zone: settings.zoneID, path: context.resolve(path.value), servedTypes: Set(types.value),
            statePath: URL(fileURLWithPath: context.stateDirectory).appendingPathComponent("adapters/\(settings.name.value).sqlite").path)
    }

    struct Plan: ScratchStorePlan {
        let name: String
        let zone: ZoneID
        let path: String
        let servedTypes: Set<String>
        let statePath: String

        /// No per-type settings (merge overrides, encryption) in this example.
        var recordTypes: [RecordTypeSettings] { [] }

        func check() async throws {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                throw ConfigError(.storeMismatch, "adapter \(name): \(path) is a folder; give the path of a JSON file")
            }
        }

        func open() async throws -> any ModelAdapter {
            try KitAdapter(
                configuration: KitAdapterConfiguration(name: name, zoneID: zone, statePath: statePath),
                store: RecordsFileStore(path: path, recordTypes: servedTypes))
        }

        var detectsChangesByScanning: Bool { true }

        /// `gateway check-adapter`: the same kind over a new file, serving `Note`.
        func openScratch(in directory: String, zone: ZoneID) async throws -> any ScratchStore {
            let store = RecordsFileStore(path: directory + "/records.json", recordTypes: ["Note"])
            let kit = try KitAdapter(
                configuration: KitAdapterConfiguration(name: name, zoneID: zone, statePath: directory + "/state.sqlite"), store: store)
            // The store takes printable ASCII record names only.
            return KitScratchStore(kit: kit) { zone in
                Record(id: RecordID(recordName: "refusé", zoneID: zone), recordType: "Note", fields: ["title": .string("refused")])
            }
        }
    }
}
