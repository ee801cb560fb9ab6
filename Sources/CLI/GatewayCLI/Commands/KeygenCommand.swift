import ArgumentParser
import GatewayConfig

struct KeygenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen", abstract: "Write a new AES-256 key file (mode 0600) for encrypted fields.")

    @Option(name: .long, help: "The key's id in the key ring.")
    var id = "k1"

    @Option(name: .long, help: "The file to write; default .gateway/keys/<id>.key. An existing file is never replaced.")
    var output: String?

    @Option(name: .long, help: "Print the fingerprint of this existing key file instead (gateways that share an id must show the same one).")
    var fingerprint: String?

    func run() async throws {
        if let fingerprint {
            Console.out("\(try KeyFile.fingerprint(at: fingerprint))  \(fingerprint)\n")
            return
        }
        guard ConfigName.isValid(id) else {
            throw ValidationError("key ids use 1 to 64 letters, digits, '-', '_' or '.'")
        }
        let path = output ?? ".gateway/keys/\(id).key"
        try KeyFile.create(at: path)
        Console.out(
            """
            wrote a new key to \(path) (mode 0600, fingerprint \(try KeyFile.fingerprint(at: path))); add it first in the key ring to encrypt with it:
            encryption:
              keys:
                - { id: \(id), file: \(path) }

            """)
    }
}
