import Foundation
import GatewayTesting
import Testing

@testable import GatewayCore

/// The prepared AES-256-GCM context must be byte-for-byte the cipher swift-crypto's public API is,
/// so values sealed before it existed (or on a platform without it) stay readable.
@Suite("prepared AES-256-GCM key")
struct PreparedAESGCMKeyTests {
    @Test("the prepared context is in use on Linux")
    func preparedOnLinux() {
        #if os(Linux)
        #expect(PreparedAESGCMKey.usesPreparedContext)
        #endif
    }

    @Test("seal and open agree with swift-crypto's AES.GCM for every length from 0 to 600 bytes", arguments: [0, 1, 2, 3])
    func agreesWithPublicAPI(_ seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let key = try PreparedAESGCMKey(rawKey: Data(random.bytes(32)))
        for length in stride(from: seed, through: 600, by: 4).map(Int.init) {
            let plaintext = random.bytes(length)
            let nonce = random.bytes(PreparedAESGCMKey.nonceSize)
            let additional = random.bytes(Int(seed) * 17 % 90)
            var prepared = Data()
            try nonce.withUnsafeBytes { try key.seal(plaintext, nonce: $0, authenticating: additional, appendingTo: &prepared) }
            let reference = try key.sealWithPublicAPI(plaintext, nonce: nonce, authenticating: additional)
            #expect(Array(prepared) == reference, "length \(length)")
            #expect(try key.openWithPublicAPI(Array(prepared), nonce: nonce, authenticating: additional) == plaintext)
            let opened = try open(key, reference, nonce: nonce, additional: additional)
            #expect(opened == plaintext, "length \(length)")
        }
    }

    @Test("open refuses a changed byte, another nonce, other authenticated data and a short input")
    func refusesTampering() throws {
        var random = SeededGenerator(seed: 9)
        let key = try PreparedAESGCMKey(rawKey: Data(random.bytes(32)))
        let plaintext = random.bytes(40)
        let nonce = random.bytes(12)
        let additional = Array("gateway-field-v1".utf8)
        let sealed = try key.sealWithPublicAPI(plaintext, nonce: nonce, authenticating: additional)
        for index in sealed.indices {
            var changed = sealed
            changed[index] ^= 0x40
            #expect(try open(key, changed, nonce: nonce, additional: additional) == nil, "byte \(index)")
        }
        var otherNonce = nonce
        otherNonce[0] ^= 1
        #expect(try open(key, sealed, nonce: otherNonce, additional: additional) == nil)
        #expect(try open(key, sealed, nonce: nonce, additional: additional + [0]) == nil)
        #expect(try open(key, Array(sealed.prefix(15)), nonce: nonce, additional: additional) == nil)
        let otherKey = try PreparedAESGCMKey(rawKey: Data(random.bytes(32)))
        #expect(try open(otherKey, sealed, nonce: nonce, additional: additional) == nil)
        #expect(try open(key, sealed, nonce: nonce, additional: additional) == plaintext, "and the untouched bytes open")
    }

    @Test("one key is shared by concurrent tasks")
    func concurrentUse() async throws {
        let key = try PreparedAESGCMKey(rawKey: Data(repeating: 7, count: 32))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var random = SeededGenerator(seed: UInt64(task))
                    for _ in 0..<500 {
                        let plaintext = random.bytes(Int(random.next() % 64))
                        let nonce = random.bytes(12)
                        var sealed = Data()
                        try nonce.withUnsafeBytes { try key.seal(plaintext, nonce: $0, authenticating: [], appendingTo: &sealed) }
                        #expect(try key.openWithPublicAPI(Array(sealed), nonce: nonce, authenticating: []) == plaintext)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func open(_ key: PreparedAESGCMKey, _ sealed: [UInt8], nonce: [UInt8], additional: [UInt8]) throws -> [UInt8]? {
        try sealed.withUnsafeBytes { sealedBytes in
            try nonce.withUnsafeBytes { nonceBytes in
                try key.open(sealedBytes, nonce: nonceBytes, authenticating: additional) { plaintext in Array(plaintext) }
            }
        }
    }
}

extension SeededGenerator {
    fileprivate mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}
