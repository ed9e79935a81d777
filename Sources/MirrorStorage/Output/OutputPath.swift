import Foundation
import MirrorCore

/// The output folder as the user names it (`--out DIR`, `--state-dir DIR`): a symbolic link there is followed to the
/// folder it names, once, before anything is opened.
///
/// Why follow it, when `.mirror` and `manifest.jsonl` planted as links are refused (SECURITY.md, 1)? Those are links
/// *inside* the output that nobody named: a folder copied in, unpacked from an archive or shared may hold them, and
/// writing through one would put mirror's files wherever its maker chose. The folder the user names is the user's word
/// (the command line is trusted); a link is how people keep a large folder on another disk, every other tool follows
/// it, and a link in the middle of the path (`~/data/imgs`, `~/data` a link) is followed by the kernel anyway. Only the
/// named folder is resolved here: what mirror makes inside it (`.mirror`, a `--queries` label's folder, a copy's
/// `shard-I-of-N` folder) must be a real folder, or the run stops and says it is a link. One link is still refused: one
/// that another user made in a shared folder with the sticky bit (as `/tmp`) — a trap set for whoever writes there,
/// which Linux's `fs.protected_symlinks` refuses to follow for the same reason.
public enum OutputPath {
    /// `path` itself when it is not a symbolic link (a folder, something that does not exist yet, or a file, which the
    /// output refuses as before); the folder it leads to when it is one.
    /// - Throws: ``FileError`` saying what the link is when it does not lead to a folder, or is another user's in a
    ///   shared folder.
    public static func resolve(_ path: String) throws(FileError) -> URL {
        let url = URL(fileURLWithPath: path)
        var link = stat()
        guard lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK else { return url }
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
        let operation = "use as the output folder"
        var parent = stat()
        let sticky: mode_t = 0o1000, othersWrite: mode_t = 0o002
        if stat(url.deletingLastPathComponent().path, &parent) == 0, parent.st_mode & sticky != 0, parent.st_mode & othersWrite != 0,
           link.st_uid != geteuid(), link.st_uid != parent.st_uid {
            throw FileError(
                operation: operation, path: path, code: EACCES,
                explanation: "it is a symbolic link (to \(target)) that another user (uid \(link.st_uid)) made in a shared folder; give the folder itself"
            )
        }
        guard let resolved = realpath(path, nil) else {
            let code = errno
            let explanation = switch code {
            case ENOENT: "it is a symbolic link to \(target), which does not exist; make that folder, or give another"
            case ELOOP: "it is a symbolic link that leads round in a loop"
            default: "it is a symbolic link to \(target), which cannot be reached (\(String(cString: strerror(code))))"
            }
            throw FileError(operation: operation, path: path, code: code, explanation: explanation)
        }
        defer { free(resolved) }
        let folder = String(cString: resolved)
        var info = stat()
        guard stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw FileError(operation: operation, path: path, code: ENOTDIR, explanation: "it is a symbolic link to \(target), which is not a folder")
        }
        return URL(fileURLWithPath: folder, isDirectory: true)
    }
}
