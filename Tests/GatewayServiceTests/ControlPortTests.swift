import Foundation
import GatewayTesting
import TestScheduling
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("gateway run and its control port", .heavy)
struct ControlPortTests {
    /// A socket listening on a free loopback port, closed when the test ends.
    final class HeldPort {
        let descriptor: Int32
        let port: UInt16

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.descriptor = descriptor
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(descriptor, pointer, length) == 0 && listen(descriptor, 1) == 0 && getsockname(descriptor, pointer, &length) == 0
                }
            }
            guard bound else { throw ConformanceFailure("could not hold a loopback port") }
            port = UInt16(bigEndian: address.sin_port)
        }

        deinit { close(descriptor) }
    }

    @Test("a control port in use is an error naming the address and the config key, not the system call")
    func portInUse() async throws {
        let held = try HeldPort()
        let directory = try TemporaryDirectory(prefix: "gateway-port")
        defer { directory.remove() }
        try Data("gateway: { control: { listen: \"127.0.0.1:\(held.port)\" } }\nadapters: []\n".utf8)
            .write(to: directory.url.appendingPathComponent("config.yaml"))
        let result = try await GatewayCLI.run(["run"], in: directory.url, timeout: .seconds(60))
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("error: the control server cannot listen on 127.0.0.1:\(held.port): the port is in use"), "\(result)")
        #expect(result.stderr.contains("gateway.control.listen"), "\(result)")
        #expect(!result.stderr.contains("bind(descriptor"), "\(result)")
    }
}
