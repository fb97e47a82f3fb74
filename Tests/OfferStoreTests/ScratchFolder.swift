import Foundation

/// The folder of this test process's SQLite files: created on first use, removed when the process exits, so a run
/// of the suite leaves no database behind in the machine's temporary directory.
enum ScratchFolder {
    /// The path of a new file in the folder, named `<prefix>-<UUID>.sqlite`.
    static func sqliteFile(_ prefix: String) -> String {
        folder.appendingPathComponent("\(prefix)-\(UUID().uuidString).sqlite").path
    }

    /// Named by a UUID, not the process ID: processes of other PID namespaces may share the temporary directory.
    private static let folder: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("offer-signer-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { ScratchFolder.remove() }
        return url
    }()

    private static func remove() {
        try? FileManager.default.removeItem(at: folder)
    }
}
