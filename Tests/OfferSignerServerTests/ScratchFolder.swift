import Foundation

/// The folder of this test process's SQLite files: created on first use, removed when the process exits, so a run
/// of the suite leaves no database behind in the machine's temporary directory.
enum ScratchFolder {
    /// The path of a new file in the folder, named `<prefix>-<UUID>.sqlite`.
    static func sqliteFile(_ prefix: String) -> String {
        folder.appendingPathComponent("\(prefix)-\(UUID().uuidString).sqlite").path
    }

    private static let folder: URL = {
        let url = location(of: getpid())
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: ScratchFolder.location(of: getpid())) }
        return url
    }()

    private static func location(of process: pid_t) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("offer-signer-tests-\(process)")
    }
}
