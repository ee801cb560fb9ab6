import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ports on 127.0.0.1 for servers that tests and harnesses start.
public enum LoopbackPort {
    /// A loopback port nobody listens on right now: the kernel picks one for a socket that is
    /// bound and closed at once. Another process may take it before the caller binds it, so a
    /// server that fails to listen should be started again on a new port.
    public static func free() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ConformanceFailure("cannot open a socket to find a free port") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw ConformanceFailure("cannot bind a loopback socket to find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
