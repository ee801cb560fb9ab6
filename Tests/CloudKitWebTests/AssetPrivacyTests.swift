import CloudKitServer
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// The endpoint stores each asset once for every user; only users handed an asset (by an answer
/// holding a record with it, or their own upload) may download it or attach it to a record, and
/// a checksum alone tells nothing about what other users hold.
@Suite("Endpoint: assets only for those handed them")
struct AssetPrivacyTests {
    static let base = "/database/1/\(EndpointServer.container)/development/private"
    let alice = TestKey(id: "alice-key", user: "_alice")
    let bob = TestKey(id: "bob-key", user: "_bob")

    /// Uploads `bytes` as `key`'s user: the `singleFile` dictionary the upload answers.
    static func upload(_ bytes: Data, as key: TestKey, to server: EndpointServer) async throws -> JSONValue {
        let tokens = try await server.post("assets/upload", ["tokens": [["recordType": "Note", "fieldName": "file"]]], signedWith: key)
        let url = try #require(tokens.body["tokens"]?.arrayValue?.first?["url"]?.stringValue)
        // The upload URL carries its own credential: the post is not signed, as to CloudKit's.
        let pathAndQuery = try #require(URLComponents(string: url).map { $0.percentEncodedPath + "?" + ($0.percentEncodedQuery ?? "") })
        let answer = try await LoopbackHTTP.send("POST", port: server.port, path: pathAndQuery, body: bytes)
        #expect(answer.status == 200)
        return try #require(try JSONValue.parse(answer.body)["singleFile"])
    }

    /// Saves record `name` with `asset` as its `file` field; the record's answer.
    static func save(_ name: String, asset: JSONValue, as key: TestKey, to server: EndpointServer, operation: String = "forceReplace")
        async throws -> JSONValue
    {
        let answer = try await server.post(
            "records/modify",
            [
                "zoneID": ["zoneName": "Notes"],
                "operations": [["operationType": .string(operation), "record": ["recordName": .string(name), "recordType": "Note", "fields": ["file": ["value": asset, "type": "ASSETID"]]]]],
            ], signedWith: key)
        #expect(answer.status == 200, "\(answer.body)")
        return try #require(answer.body["records"]?.arrayValue?.first)
    }

    @Test("another user can neither download an asset by its checksum nor attach it to a record, and a made-up checksum is answered alike; the owner can do both")
    func assetsStayWithThoseHandedThem() async throws {
        let directory = try TemporaryDirectory(prefix: "asset-privacy")
        defer { directory.remove() }
        let server = try await EndpointServer(
            cloud: try EmbeddedCloud(path: directory.path("cloud.sqlite")),
            configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [alice.registered, bob.registered]))
        do {
            for key in [alice, bob] {
                let created = try await server.post("zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Notes"]]]]], signedWith: key)
                #expect(created.status == 200)
            }
            // An upload URL without a valid signature takes nothing.
            let forged = try await LoopbackHTTP.send(
                "POST", port: server.port, path: "\(Self.base)/assets/data?user=_alice&expires=99999999999&sig=forged", body: Data("x".utf8))
            #expect(forged.status == 401)
            let secret = Data("alice's private bytes".utf8)
            let uploaded = try await Self.upload(secret, as: alice, to: server)
            let checksum = try #require(uploaded["fileChecksum"]?.stringValue)
            let size = try #require(uploaded["size"]?.int64Value)

            // Alice saves it with her receipt and downloads it through the URL her answers give,
            // without signing the request, as CloudKit's pre-signed URLs work.
            let saved = try await Self.save("mine", asset: uploaded, as: alice, to: server)
            #expect(saved["serverErrorCode"] == nil, "\(saved)")
            let url = try #require(saved["fields"]?["file"]?["value"]?["downloadURL"]?.stringValue)
            let pathAndQuery = try #require(URLComponents(string: url).map { $0.percentEncodedPath + "?" + ($0.percentEncodedQuery ?? "") })
            let fetched = try await LoopbackHTTP.send("GET", port: server.port, path: pathAndQuery)
            #expect(fetched.status == 200 && fetched.body == secret)

            // Bob knows the checksum but was handed nothing.
            let bare = "\(Self.base)/assets/download/\(checksum)/\(size)"
            let madeUp = "\(Self.base)/assets/download/\(String(repeating: "ab", count: 32))/\(size)"
            for path in [bare, bare + "?sig=forged", madeUp] {
                let answer = try await server.get(path: path, signedWith: bob)
                #expect(answer.status == 404 && answer.body["serverErrorCode"] == "NOT_FOUND", "\(path): \(answer.body)")
            }
            let byChecksum = try await Self.save("stolen", asset: ["fileChecksum": .string(checksum), "size": .integer(size)], as: bob, to: server)
            guard case .object(var members) = uploaded else { throw ConformanceFailure("the upload answered no dictionary") }
            members["downloadURL"] = nil
            let withAlicesReceipt = JSONValue.object(members)
            let byReceipt = try await Self.save("stolen2", asset: withAlicesReceipt, as: bob, to: server)
            let byMadeUp = try await Self.save(
                "guess", asset: ["fileChecksum": .string(String(repeating: "ab", count: 32)), "size": .integer(size)], as: bob, to: server)
            for refused in [byChecksum, byReceipt, byMadeUp] {
                #expect(refused["serverErrorCode"] == "BAD_REQUEST", "\(refused)")
                #expect(refused["reason"]?.stringValue?.contains("never uploaded") == true, "\(refused)")
            }

            // Alice saves her record back naming the asset by its checksum alone (a record fetched
            // earlier): it is the record's own asset.
            let again = try await Self.save("mine", asset: ["fileChecksum": .string(checksum), "size": .integer(size)], as: alice, to: server)
            #expect(again["serverErrorCode"] == nil, "\(again)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
