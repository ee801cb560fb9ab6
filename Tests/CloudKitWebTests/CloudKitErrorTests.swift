import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GatewayCore
import Testing

@testable import CloudKitWeb

/// CloudKit's error dictionaries and statuses, mapped to ``CloudError``.
@Suite("CloudKit Web Services errors")
struct CloudKitErrorTests {
    static func json(_ text: String) throws -> JSONValue { try JSONValue.parse(Data(text.utf8)) }

    @Test("an endpoint that is not listening is a connection failure that says nothing was sent, naming the URL")
    func nothingListening() async throws {
        // A port that was free a moment ago: bound, then closed.
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0 }
        }
        close(probe)
        let url = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        let database = try CloudKitWebDatabase(
            configuration: CloudKitWebConfiguration(
                baseURL: url, container: "iCloud.test", authentication: .serverToServer(CloudKitRequestSigner(keyID: "k", privateKey: P256.Signing.PrivateKey())),
                requestTimeout: .seconds(10)))
        do {
            _ = try await database.zones()
            Issue.record("expected a connection failure")
        } catch let error as CloudError {
            #expect(error.code == .networkFailure)
            #expect(error.message.contains("could not connect to \(url) (connection refused); nothing was sent"), "\(error.message)")
            #expect(!error.message.contains("may or may not"), "\(error.message)")
        }
    }

    @Test("Apple's fourteen server error codes map to cloud error codes")
    func serverCodes() {
        let table: [(String, CloudError.Code)] = [
            ("ACCESS_DENIED", .permissionFailure), ("ATOMIC_ERROR", .batchRequestFailed), ("AUTHENTICATION_FAILED", .notAuthenticated),
            ("AUTHENTICATION_REQUIRED", .notAuthenticated), ("BAD_REQUEST", .invalidArguments), ("CONFLICT", .serverRecordChanged),
            ("EXISTS", .serverRecordChanged), ("INTERNAL_ERROR", .internalError), ("NOT_FOUND", .unknownItem),
            ("QUOTA_EXCEEDED", .quotaExceeded), ("THROTTLED", .requestRateLimited), ("TRY_AGAIN_LATER", .serviceUnavailable),
            ("VALIDATING_REFERENCE_ERROR", .invalidArguments), ("ZONE_NOT_FOUND", .zoneNotFound), ("SOMETHING_NEW", .internalError),
        ]
        for (server, code) in table {
            #expect(CloudKitErrorCoding.code(forServerErrorCode: server) == code, "\(server)")
        }
    }

    @Test("every cloud error code survives the endpoint's error dictionary; without the extension key the table applies")
    func roundTrip() throws {
        for code in CloudError.Code.allCases {
            let encoded = CloudKitErrorCoding.encode(CloudError(code, "what happened"), recordName: "r")
            #expect(encoded["recordName"] == "r")
            let decoded = CloudKitErrorCoding.decode(encoded, context: "test")
            #expect(decoded.code == code, "\(code)")
            guard case .object(var plain) = encoded else { continue }
            plain[CloudKitErrorCoding.gatewayCodeKey] = nil
            let (server, status) = CloudKitErrorCoding.serverErrorCode(for: code)
            #expect(CloudKitErrorCoding.decode(.object(plain), context: "test").code == CloudKitErrorCoding.code(forServerErrorCode: server))
            #expect((400..<600).contains(status))
        }
    }

    @Test("AUTHENTICATION_REQUIRED names the sign-in URL; THROTTLED carries retryAfter; the request uuid is kept")
    func appleSamples() throws {
        let required = CloudKitErrorCoding.decode(
            try Self.json(
                #"{"uuid":"2a7b-4d","serverErrorCode":"AUTHENTICATION_REQUIRED","reason":"request needs authorization","redirectURL":"https://idmsa.apple.com/signin"}"#
            ), context: "users/caller")
        #expect(required.code == .notAuthenticated)
        #expect(required.message.contains("https://idmsa.apple.com/signin") && required.message.contains("2a7b-4d"), "\(required.message)")
        let throttled = CloudKitErrorCoding.decode(try Self.json(#"{"serverErrorCode":"THROTTLED","reason":"slow down","retryAfter":3}"#), context: "x")
        #expect(throttled.code == .requestRateLimited && throttled.retryAfter == .seconds(3))
        let header = CloudKitErrorCoding.decode(try Self.json(#"{"serverErrorCode":"TRY_AGAIN_LATER"}"#), context: "x", retryAfterHeader: "7")
        #expect(header.code == .serviceUnavailable && header.retryAfter == .seconds(7) && header.code.isTransient)
    }

    @Test("answers without CloudKit's error body map by HTTP status")
    func statuses() throws {
        func code(_ status: Int, body: String = "<html>bad gateway</html>") -> CloudError.Code? {
            do {
                _ = try CloudKitTransport.json(CloudKitTransport.Answer(status: status, body: Data(body.utf8), retryAfter: nil), context: "t")
                return nil
            } catch let error as CloudError {
                return error.code
            } catch {
                return .internalError
            }
        }
        #expect(code(502) == .serviceUnavailable)
        #expect(code(503) == .serviceUnavailable)
        #expect(code(429) == .requestRateLimited)
        #expect(code(421) == .notAuthenticated)
        #expect(code(404) == .unknownItem)
        #expect(code(413) == .limitExceeded)
        #expect(code(409, body: #"{"serverErrorCode":"CONFLICT","reason":"r"}"#) == .serverRecordChanged)
        #expect(code(200, body: "not json") == .internalError)
        #expect(code(200, body: "{}") == nil)
    }
}
