import Foundation
import MirrorCore

/// `DIR/gallery/`: a static contact sheet of a collection — pages of thumbnail tiles with title, creator, licence and
/// a link to the source page, a header with the searches and the counts by provider and licence, and filters by
/// query, provider and licence. It opens from `file://`: no server, no network request, no framework; the filters
/// are a few lines of inline script over `data-` attributes, read from and written to the page's query string
/// (`index.html?license=cc-by%204.0`), which the page links carry along.
///
/// Every field is HTML-escaped, and only `http(s)` addresses become links: a hostile title or URL is shown as text.
public struct GalleryPage: Sendable {
    public let collection: SavedImages
    public let thumbnails: Thumbnails
    /// Tiles per page. Default 500.
    public var pageSize = 500

    public init(collection: SavedImages, thumbnails: Thumbnails, pageSize: Int = 500) {
        self.collection = collection
        self.thumbnails = thumbnails
        self.pageSize = max(1, pageSize)
    }

    /// The folder the pages go to.
    public var directory: URL { collection.root.appendingPathComponent("gallery", isDirectory: true) }

    /// `index.html` for page 1, `page-N.html` after it.
    public static func fileName(page: Int) -> String { page == 1 ? "index.html" : "page-\(page).html" }

    public var pageCount: Int { max(1, (collection.items.count + pageSize - 1) / pageSize) }

    /// Writes every page (each whole, through a temporary file) and removes pages a larger collection left.
    /// - Returns: the first page's URL.
    @discardableResult
    public func write() throws -> URL {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw FileError(operation: "create", path: directory.path, code: EACCES)
        }
        let header = self.header()
        for page in 1...pageCount {
            let slice = collection.items.dropFirst((page - 1) * pageSize).prefix(pageSize)
            try AtomicFile.replaceFile(Data(html(page: page, items: slice, header: header).utf8), at: directory.appendingPathComponent(Self.fileName(page: page)))
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] {
            if name.hasPrefix("page-"), let number = Int(name.dropFirst(5).dropLast(5)), number > pageCount {
                AtomicFile.remove(directory.appendingPathComponent(name))
            }
        }
        return directory.appendingPathComponent("index.html")
    }

    // MARK: The page

    private func html(page: Int, items: ArraySlice<SavedImages.Item>, header: String) -> String {
        var tiles = ""
        tiles.reserveCapacity(items.count * 600)
        for item in items { tiles += tile(item) }
        return """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self' file: data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
        <title>\(Self.escape(collection.root.lastPathComponent)) — mirror gallery, page \(page) of \(pageCount)</title>
        <style>\(Self.style)</style></head>
        <body>
        \(header)
        \(navigation(page: page))
        <main id="tiles">
        \(tiles)</main>
        \(navigation(page: page))
        <script>\(Self.script)</script>
        </body></html>

        """
    }

    private func tile(_ item: SavedImages.Item) -> String {
        let record = item.record
        let title = record.title ?? record.caption ?? (record.file as NSString).lastPathComponent
        let source = Self.link(record.pageURL) ?? Self.link(record.url)
        var html = "<figure class=\"tile\" data-query=\"\(Self.escape(item.group ?? ""))\" data-provider=\"\(Self.escape(record.provider ?? "url list"))\" data-license=\"\(Self.escape(record.license ?? "unknown"))\">"
        let thumbnail = thumbnails.directory.appendingPathComponent(thumbnails.name(for: item))
        let image: String
        if FileManager.default.fileExists(atPath: thumbnail.path) {
            let scale = min(1, Double(thumbnails.size) / Double(max(record.width, record.height, 1)))
            image = "<img loading=\"lazy\" src=\"../.mirror/thumbs/\(Self.escape(thumbnails.name(for: item)))\" alt=\"\(Self.escape(title))\" width=\"\(Int((Double(record.width) * scale).rounded()))\" height=\"\(Int((Double(record.height) * scale).rounded()))\">"
        } else {
            image = "<span class=\"none\">no preview</span>"
        }
        if case .file = item.location {
            html += "<a class=\"image\" href=\"../\(Self.escape(Self.pathEncoded(item.path)))\">\(image)</a>"
        } else {
            html += "<span class=\"image\">\(image)</span>"
        }
        html += "<figcaption><span class=\"title\">"
        html += source.map { "<a href=\"\(Self.escape($0))\" rel=\"noreferrer\">\(Self.escape(title))</a>" } ?? Self.escape(title)
        html += "</span>"
        if let creator = record.creator { html += "<span class=\"creator\">\(Self.escape(creator))</span>" }
        let license = record.license.map { Self.licenseName($0) } ?? "licence unknown"
        html += "<span class=\"license\">"
        html += Self.link(record.licenseURL).map { "<a href=\"\(Self.escape($0))\" rel=\"license noreferrer\">\(Self.escape(license))</a>" } ?? Self.escape(license)
        html += "</span><span class=\"size\">\(record.width)×\(record.height) \(Self.escape(record.format))</span></figcaption></figure>\n"
        return html
    }

    private func header() -> String {
        let items = collection.items
        func counts(_ key: (SavedImages.Item) -> String) -> [(String, Int)] {
            var counts: [String: Int] = [:]
            for item in items { counts[key(item), default: 0] += 1 }
            return counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
        }
        let providers = counts { $0.record.provider ?? "url list" }
        let licenses = counts { $0.record.license ?? "unknown" }
        let groups = counts { $0.group ?? "" }.filter { !$0.0.isEmpty }
        func select(_ name: String, _ label: String, _ values: [(String, Int)], show: (String) -> String = { $0 }) -> String {
            var html = "<label>\(label) <select name=\"\(name)\"><option value=\"\">all</option>"
            for (value, count) in values { html += "<option value=\"\(Self.escape(value))\">\(Self.escape(show(value))) (\(count))</option>" }
            return html + "</select></label>"
        }
        func list(_ values: [(String, Int)], show: (String) -> String = { $0 }) -> String {
            values.prefix(30).map { "\(Self.escape(show($0.0))) <b>\($0.1)</b>" }.joined(separator: " · ")
        }
        var html = "<header><h1>\(Self.escape(collection.root.lastPathComponent)) <small>\(items.count) images · \(pageCount) page\(pageCount == 1 ? "" : "s")</small></h1>"
        if !collection.searches.isEmpty {
            let searches = collection.searches.map { "\(Self.escape($0.query)) <b>\($0.saved)</b>" }.joined(separator: " · ")
            html += "<p><span class=\"key\">searches</span> \(searches)</p>"
        }
        html += "<p><span class=\"key\">providers</span> \(list(providers))</p>"
        html += "<p><span class=\"key\">licences</span> \(list(licenses, show: Self.licenseName))</p>"
        html += "<form id=\"filters\">"
        if !groups.isEmpty { html += select("query", "query", groups) }
        html += select("provider", "provider", providers) + select("license", "licence", licenses, show: Self.licenseName)
        html += " <output id=\"shown\"></output></form></header>"
        return html
    }

    private func navigation(page: Int) -> String {
        guard pageCount > 1 else { return "" }
        var html = "<nav>"
        if page > 1 { html += "<a class=\"page\" href=\"\(Self.fileName(page: page - 1))\">← previous</a> " }
        for number in 1...pageCount {
            html += number == page ? "<b>\(number)</b> " : "<a class=\"page\" href=\"\(Self.fileName(page: number))\">\(number)</a> "
        }
        if page < pageCount { html += "<a class=\"page\" href=\"\(Self.fileName(page: page + 1))\">next →</a>" }
        return html + "</nav>"
    }

    // MARK: Text

    /// HTML-escapes text for an element or a quoted attribute.
    public static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    /// The address if it is an absolute http(s) URL (never `javascript:` or `data:`), else `nil`.
    static func link(_ text: String?) -> String? {
        guard let text, let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else { return nil }
        return text
    }

    /// A relative path with each segment percent-encoded (file names may hold `#`, `?`, `%`).
    static func pathEncoded(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%;")
        return path.split(separator: "/", omittingEmptySubsequences: false).map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0) }.joined(separator: "/")
    }

    /// `cc-by 4.0` → `CC BY 4.0`, `cc0 1.0` → `CC0 1.0`, `pdm` → `Public Domain Mark`.
    public static func licenseName(_ code: String) -> String {
        let parts = code.split(separator: " ", maxSplits: 1)
        guard let name = parts.first?.lowercased() else { return code }
        let version = parts.count > 1 ? " " + parts[1] : ""
        switch name {
        case "pdm": return "Public Domain Mark" + version
        case "unknown": return "licence unknown"
        default:
            if name.hasPrefix("cc") { return name.uppercased().replacingOccurrences(of: "-", with: " ") + version }
            return code
        }
    }

    private static let style = """
    body{font:14px/1.35 system-ui,sans-serif;margin:0;background:#f4f4f2;color:#222}header{padding:12px 16px;background:#fff;border-bottom:1px solid #ddd}\
    h1{font-size:20px;margin:0 0 6px}h1 small{font-weight:normal;color:#666;font-size:14px}p{margin:4px 0}.key{display:inline-block;width:70px;color:#777}\
    form label{margin-right:12px}nav{padding:8px 16px}nav a,nav b{margin-right:4px}\
    main{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:10px;padding:10px 16px}\
    .tile{margin:0;background:#fff;border:1px solid #ddd;border-radius:4px;overflow:hidden;display:flex;flex-direction:column}\
    .tile[hidden]{display:none}.image{display:flex;align-items:center;justify-content:center;height:200px;background:#eee}\
    .image img{max-width:100%;max-height:200px;width:auto;height:auto}.none{color:#999}\
    figcaption{padding:6px 8px;display:flex;flex-direction:column;gap:2px;font-size:12px}.title{font-weight:600;overflow-wrap:anywhere}\
    .creator,.size{color:#555}.license a,.title a{color:#0a58ca;text-decoration:none}
    """

    private static let script = """
    (function(){var q=new URLSearchParams(location.search),f=document.getElementById('filters'),t=document.querySelectorAll('.tile'),n=0;\
    f.querySelectorAll('select').forEach(function(s){s.value=q.get(s.name)||'';s.addEventListener('change',function(){\
    var p=new URLSearchParams();f.querySelectorAll('select').forEach(function(x){if(x.value)p.set(x.name,x.value)});\
    location.search=p.toString()})});\
    t.forEach(function(e){var ok=true;q.forEach(function(v,k){if(v&&e.dataset[k]!==v)ok=false});e.hidden=!ok;if(ok)n++});\
    document.getElementById('shown').textContent=n+' of '+t.length+' on this page';\
    if(location.search)document.querySelectorAll('a.page').forEach(function(a){a.search=location.search})})();
    """
}
