import CloudKitServer
import CloudKitWeb
import Crypto
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

/// Server-to-server signing: fixed vectors, and signatures checked by an independent
/// implementation (the `openssl` command) in both directions.
@Suite("CloudKit server-to-server signatures", .heavy)
struct CloudKitSigningTests {
    /// A fixed P-256 key made with `openssl ecparam -name prime256v1 -genkey -noout`.
    static let privateKeyPEM = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIOuzctC6u2n2+rn3d0FlbSkFr8IpROcxpaymct7MyVHSoAoGCCqGSM49
        AwEHoUQDQgAE0qTM+sGB0pKRjTYIb56iNCgnjcfjXwdHEGrSN2P/25C3CCuO0I+C
        1twMer2oP3O38r+06y/BWl7ITbduJNqSZQ==
        -----END EC PRIVATE KEY-----
        """
    static let publicKeyPEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE0qTM+sGB0pKRjTYIb56iNCgnjcfj
        XwdHEGrSN2P/25C3CCuO0I+C1twMer2oP3O38r+06y/BWl7ITbduJNqSZQ==
        -----END PUBLIC KEY-----
        """
    static let date = Date(timeIntervalSince1970: 1_453_760_143)
    static let body = Data(#"{"records":[]}"#.utf8)
    static let subpath = "/database/1/iCloud.com.example.MyApp/development/public/records/query"
    static let message =
        "2016-01-25T22:15:43Z:G4tMC29q0dMlZZUnILwATusfGI9iBF5NVSWuKvjHhDI=:/database/1/iCloud.com.example.MyApp/development/public/records/query"
    /// `openssl dgst -sha256 -sign fixed.pem` of ``message``, base64.
    static let opensslSignature = "MEQCIHoppoJUMKg5UNNrPszVO0HohnKgp8WhQOh7nvCn7deQAiBckopokQOboxK4Eo7BAKOUoYgAhUeLtSfrn936+AIwmA=="

    static func verifier(skew: Duration = .seconds(600)) throws -> CloudKitSignatureVerifier {
        CloudKitSignatureVerifier(
            keys: [try CloudKitSignatureVerifier.Key(keyID: "fixed-key", publicKeyPEM: publicKeyPEM, userRecordName: "_fixed")],
            maximumClockSkew: skew)
    }

    @Test("the signed message and the headers match the fixed vectors")
    func fixedVectors() throws {
        #expect(CloudKitRequestSigner.message(date: "2016-01-25T22:15:43Z", body: Self.body, subpath: Self.subpath) == Self.message)
        #expect(
            CloudKitRequestSigner.message(date: "2016-01-25T22:15:43Z", body: Data(), subpath: "/p")
                == "2016-01-25T22:15:43Z:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:/p", "a request without a body hashes no bytes")
        #expect(CloudKitRequestSigner.dateText(Self.date) == "2016-01-25T22:15:43Z")
        let signer = try CloudKitRequestSigner(keyID: "fixed-key", pem: Self.privateKeyPEM)
        #expect(signer.publicKeyPEM.trimmingCharacters(in: .whitespacesAndNewlines) == Self.publicKeyPEM)
        let headers = try signer.headers(body: Self.body, subpath: Self.subpath, date: Self.date)
        #expect(headers.map(\.name) == ["X-Apple-CloudKit-Request-KeyID", "X-Apple-CloudKit-Request-ISO8601Date", "X-Apple-CloudKit-Request-SignatureV1"])
        #expect(headers[0].value == "fixed-key")
        #expect(headers[1].value == "2016-01-25T22:15:43Z")
        let der = try #require(Data(base64Encoded: headers[2].value))
        #expect(der.first == 0x30, "the signature is a DER SEQUENCE")
        let verified = try Self.verifier().verify(
            keyID: "fixed-key", date: headers[1].value, signature: headers[2].value, body: Self.body, subpath: Self.subpath, now: Self.date)
        #expect((try? verified.get())?.userRecordName == "_fixed")
    }

    @Test("a signature OpenSSL made for the fixed key and message is accepted")
    func opensslVector() throws {
        let result = try Self.verifier().verify(
            keyID: "fixed-key", date: "2016-01-25T22:15:43Z", signature: Self.opensslSignature, body: Self.body, subpath: Self.subpath,
            now: Self.date.addingTimeInterval(30))
        #expect((try? result.get()) != nil, "\(result)")
    }

    @Test("OpenSSL verifies the gateway's signatures, and the gateway verifies OpenSSL's")
    func bothDirectionsWithOpenSSL() async throws {
        let directory = try TemporaryDirectory(prefix: "signing")
        defer { directory.remove() }
        let key = P256.Signing.PrivateKey()
        try Data(key.pemRepresentation.utf8).write(to: directory.url.appendingPathComponent("key.pem"))
        try Data(key.publicKey.pemRepresentation.utf8).write(to: directory.url.appendingPathComponent("pub.pem"))
        let signer = CloudKitRequestSigner(keyID: "k", privateKey: key)
        let body = Data(#"{"operations":[{"operationType":"forceDelete","record":{"recordName":"n-9"}}]}"#.utf8)
        let path = "/database/1/iCloud.com.example.App/development/private/records/modify"
        let now = Date()
        let headers = try signer.headers(body: body, subpath: path, date: now)
        let message = CloudKitRequestSigner.message(date: headers[1].value, body: body, subpath: path)
        try Data(message.utf8).write(to: directory.url.appendingPathComponent("message"))
        try Data(base64Encoded: headers[2].value)!.write(to: directory.url.appendingPathComponent("signature.der"))
        let verify = try await Self.openssl(["dgst", "-sha256", "-verify", "pub.pem", "-signature", "signature.der", "message"], in: directory)
        #expect(verify.status == 0 && verify.output.contains("Verified OK"), "\(verify.output)")

        try Data((message + "x").utf8).write(to: directory.url.appendingPathComponent("tampered"))
        let tampered = try await Self.openssl(["dgst", "-sha256", "-verify", "pub.pem", "-signature", "signature.der", "tampered"], in: directory)
        #expect(tampered.status != 0, "OpenSSL rejects a signature over other bytes")

        let signed = try await Self.openssl(["dgst", "-sha256", "-sign", "key.pem", "-out", "openssl.der", "message"], in: directory)
        #expect(signed.status == 0, "\(signed.output)")
        let opensslSignature = try Data(contentsOf: directory.url.appendingPathComponent("openssl.der")).base64EncodedString()
        let verifier = CloudKitSignatureVerifier(
            keys: [try CloudKitSignatureVerifier.Key(keyID: "k", publicKeyPEM: key.publicKey.pemRepresentation, userRecordName: "_k")])
        let accepted = verifier.verify(keyID: "k", date: headers[1].value, signature: opensslSignature, body: body, subpath: path, now: now)
        #expect((try? accepted.get()) != nil, "\(accepted)")
    }

    @Test("wrong keys, dates more than ten minutes off, other bodies or paths and malformed signatures are refused")
    func refusals() throws {
        let signer = try CloudKitRequestSigner(keyID: "fixed-key", pem: Self.privateKeyPEM)
        let headers = try signer.headers(body: Self.body, subpath: Self.subpath, date: Self.date)
        let verifier = try Self.verifier()
        func reason(
            keyID: String? = "fixed-key", date: String? = nil, signature: String? = nil, body: Data = Self.body, subpath: String = Self.subpath,
            now: Date = Self.date
        ) -> String? {
            let result = verifier.verify(
                keyID: keyID, date: date ?? headers[1].value, signature: signature ?? headers[2].value, body: body, subpath: subpath, now: now)
            if case .failure(let refusal) = result { return refusal.reason }
            return nil
        }
        #expect(reason() == nil)
        #expect(reason(now: Self.date.addingTimeInterval(599)) == nil, "nine minutes and 59 seconds late is accepted")
        #expect(reason(now: Self.date.addingTimeInterval(601))?.contains("away from the server's clock") == true)
        #expect(reason(now: Self.date.addingTimeInterval(-601))?.contains("away from the server's clock") == true)
        #expect(reason(keyID: "other")?.contains("not registered") == true)
        #expect(reason(keyID: nil)?.contains("not signed") == true)
        #expect(reason(body: Data("{}".utf8))?.contains("does not match") == true)
        #expect(reason(subpath: "/database/1/iCloud.com.example.MyApp/development/private/records/query")?.contains("does not match") == true)
        #expect(reason(date: "2016-01-25T22:15:44Z")?.contains("does not match") == true, "the date is part of the signed message")
        #expect(reason(signature: "not base64!")?.contains("not base64") == true)
        #expect(reason(signature: Data([1, 2, 3]).base64EncodedString())?.contains("not an ECDSA signature") == true)
        let raw = try P256.Signing.ECDSASignature(derRepresentation: Data(base64Encoded: headers[2].value)!).rawRepresentation
        #expect(reason(signature: raw.base64EncodedString()) == nil, "a raw r‖s signature is accepted too")
    }

    @Test("the endpoint refuses unsigned, badly signed and stale requests with AUTHENTICATION_FAILED")
    func endpointRefusals() async throws {
        let directory = try TemporaryDirectory(prefix: "signing-endpoint")
        defer { directory.remove() }
        let key = TestKey(id: "good", user: "_good")
        let server = try await EndpointServer(
            cloud: try EmbeddedCloud(path: directory.path("cloud.sqlite")),
            configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [key.registered]))
        do {
            try await Self.expectRefusals(server: server, key: key)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    static func expectRefusals(server: EndpointServer, key: TestKey) async throws {
        let path = "/database/1/\(EndpointServer.container)/development/private/zones/list"
        func get(_ headers: [(name: String, value: String)]) async throws -> (status: Int, code: String?) {
            let response = try await LoopbackHTTP.send(
                "GET", port: server.port, path: path, headers: Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 }))
            return (response.status, try? JSONValue.parse(response.body)["serverErrorCode"]?.stringValue)
        }
        let good = try await get(key.signer.headers(body: Data(), subpath: path))
        #expect(good.status == 200)
        let unsigned = try await get([])
        #expect(unsigned.status == 401 && unsigned.code == "AUTHENTICATION_FAILED")
        let stale = try await get(key.signer.headers(body: Data(), subpath: path, date: Date().addingTimeInterval(-11 * 60)))
        #expect(stale.status == 401 && stale.code == "AUTHENTICATION_FAILED")
        let future = try await get(key.signer.headers(body: Data(), subpath: path, date: Date().addingTimeInterval(11 * 60)))
        #expect(future.status == 401)
        let stranger = TestKey(id: "good", user: "_impostor")
        let forged = try await get(stranger.signer.headers(body: Data(), subpath: path))
        #expect(forged.status == 401, "a signature by another key under a registered id is refused")
        let otherPath = try await get(key.signer.headers(body: Data(), subpath: path.replacingOccurrences(of: "zones/list", with: "zones/lookup")))
        #expect(otherPath.status == 401, "a signature for another path is refused")
    }

    static func openssl(_ arguments: [String], in directory: TemporaryDirectory) async throws -> (status: Int32, output: String) {
        let output = directory.path("openssl-\(UUID().uuidString).out")
        let process = try ChildProcess(
            "/usr/bin/env", arguments: ["-C", directory.url.path, "openssl"] + arguments, standardOutput: output, standardError: output)
        let status = try await process.wait(timeout: .seconds(30))
        return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }
}
