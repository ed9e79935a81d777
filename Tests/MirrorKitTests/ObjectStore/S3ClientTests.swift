import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorObjectStore
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import MirrorTransport
import Testing

/// The S3 client's requests as libcurl signs them, and its handling of answers, behind a stub loader. (The client
/// against a real S3 server with signature checking is `scripts/check/check-s3`, read back by boto3.)
@Suite("S3 client")
struct S3ClientTests {
    private func client(_ loader: StubLoader, endpoint: String? = "http://127.0.0.1:9000/") -> S3Client {
        var settings = S3Configuration(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG")
        settings.endpoint = endpoint.flatMap(URL.init(string:))
        settings.region = "eu-west-3"
        settings.retry = RetryPolicy(maximumRetries: 2, baseDelay: .zero, maximumDelay: .zero)
        return S3Client(location: S3Location("s3://bucket/data set/2026")!, configuration: settings, loader: loader, sleeper: Sleeper(now: { .now }, sleep: { _ in }))
    }

    @Test func locationsParse() {
        #expect(S3Location("s3://b/p/q/") == S3Location(bucket: "b", prefix: "p/q"))
        #expect(S3Location("S3://b") == S3Location(bucket: "b", prefix: ""))
        #expect(S3Location("s3:///p") == nil && S3Location("/tmp/x") == nil)
        let location = S3Location(bucket: "b", prefix: "ds")
        #expect(location.key("00001.tar") == "ds/00001.tar")
        #expect(location.name(ofKey: "ds/00001.tar") == "00001.tar")
        #expect(location.name(ofKey: "ds2/00001.tar") == nil && location.name(ofKey: "ds/x/00001.tar") == nil)
    }

    @Test func urlsArePathStyleUnderAnEndpointWithTheQuerySortedAndEncoded() {
        let s3 = client(StubLoader.sequence([]))
        let url = s3.url(key: "data set/2026/00001.tar", query: [("uploadId", "a/b+c"), ("partNumber", "2")])
        #expect(url.absoluteString == "http://127.0.0.1:9000/bucket/data%20set/2026/00001.tar?partNumber=2&uploadId=a%2Fb%2Bc")
        #expect(s3.url(key: nil, query: [("uploads", ""), ("prefix", "p")]).absoluteString == "http://127.0.0.1:9000/bucket?prefix=p&uploads=")
        let aws = client(StubLoader.sequence([]), endpoint: nil)
        #expect(aws.url(key: "k", query: []).absoluteString == "https://bucket.s3.eu-west-3.amazonaws.com/k")
    }

    @Test func requestsAreSignedAndCarryTheirPayloadHash() async throws {
        let loader = StubLoader.sequence([(204, "")])
        try await client(loader).delete(key: "k")
        let request = try #require(loader.recorded.first)
        #expect(request.method == "DELETE")
        #expect(request.awsSignature?.provider == "aws:amz:eu-west-3:s3")
        #expect(request.headers.contains { $0.0 == "x-amz-content-sha256" && $0.1 == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" })
        #expect(!String(describing: request.awsSignature!).contains("wJalr"))
    }

    @Test func aListingIsFollowedPageByPage() async throws {
        let page1 = "<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Size>10</Size><Key>ds/00000.tar</Key></Contents><NextContinuationToken>t/1=</NextContinuationToken></ListBucketResult>"
        let page2 = "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>ds/00000_stats.json</Key><Size>2</Size></Contents></ListBucketResult>"
        let loader = StubLoader.sequence([(200, page1), (200, page2)])
        let objects = try await client(loader).listObjects(prefix: "ds")
        #expect(objects.map(\.key) == ["ds/00000.tar", "ds/00000_stats.json"])
        #expect(loader.recorded.last?.url.query == "continuation-token=t%2F1%3D&list-type=2&prefix=ds")
    }

    @Test func uploadsAreReadPerElementWhateverTheOrderOfTheirFields() async throws {
        // moto writes UploadId before Key; S3 documents Key first. Two pages.
        let page1 = "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker>ds/1.tar</NextKeyMarker><NextUploadIdMarker>B</NextUploadIdMarker>"
            + "<Upload><UploadId>A</UploadId><Key>ds/0.tar</Key><Initiated>x</Initiated></Upload><Upload><Key>ds/1.tar</Key><UploadId>B</UploadId></Upload></ListMultipartUploadsResult>"
        let page2 = "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated><Upload><UploadId>C</UploadId><Key>ds/2.tar</Key></Upload></ListMultipartUploadsResult>"
        let loader = StubLoader.sequence([(200, page1), (200, page2)])
        let uploads = try await client(loader).listUploads(prefix: "ds")
        #expect(uploads == [.init(key: "ds/0.tar", id: "A"), .init(key: "ds/1.tar", id: "B"), .init(key: "ds/2.tar", id: "C")])
        #expect(loader.recorded.last?.url.query == "key-marker=ds%2F1.tar&prefix=ds&upload-id-marker=B&uploads=")
    }

    @Test func aRejectedSignatureIsTheCredentialsFaultAndIsNotRetried() async throws {
        let loader = StubLoader.sequence([(403, "<Error><Code>SignatureDoesNotMatch</Code></Error>")])
        await #expect {
            try await client(loader).listObjects(prefix: "ds")
        } throws: { error in
            guard let error = error as? ObjectStoreError, case .rejected("SignatureDoesNotMatch", _) = error else { return false }
            return error.isConfiguration && error.description.contains("AWS_SECRET_ACCESS_KEY") && !error.description.contains("wJalr")
        }
        #expect(loader.recorded.count == 1)
    }

    @Test func serverErrorsAreRetriedThenReported() async throws {
        let loader = StubLoader.sequence([(503, "<Error><Code>SlowDown</Code></Error>"), (503, ""), (503, "")])
        await #expect {
            try await client(loader).delete(key: "k")
        } throws: { error in
            (error as? ObjectStoreError)?.isTransient == true
        }
        #expect(loader.recorded.count == 3)
        let recovering = StubLoader.sequence([(500, ""), (204, "")])
        try await client(recovering).delete(key: "k")
        #expect(recovering.recorded.count == 2)
    }

    @Test func aMissingBucketSaysSo() async throws {
        let loader = StubLoader.sequence([(404, "<Error><Code>NoSuchBucket</Code></Error>")])
        await #expect {
            try await client(loader).listObjects(prefix: "")
        } throws: { error in
            (error as? ObjectStoreError)?.description == "bucket bucket does not exist at http://127.0.0.1:9000/: create it, or correct --out"
        }
    }

    @Test func aLargeFileGoesUpInPartsAndAFailedPartAbortsTheUpload() async throws {
        let folder = TemporaryFolder()
        let file = folder.url.appendingPathComponent("00000.tar")
        try Data(repeating: 7, count: 12 << 20).write(to: file)
        let created = "<InitiateMultipartUploadResult><UploadId>U1</UploadId></InitiateMultipartUploadResult>"
        // 12 MiB in 5 MiB parts: 3 parts, then completion
        let loader = StubLoader.sequence([(200, created), (200, ""), (200, ""), (200, ""), (200, "<CompleteMultipartUploadResult/>")])
        var s3 = client(loader)
        s3 = S3Client(location: s3.location, configuration: { var c = s3.configuration; c.partSize = 5 << 20; return c }(), loader: loader)
        try await s3.put(file: file, key: "ds/00000.tar", contentType: "application/x-tar")
        let requests = loader.recorded
        #expect(requests.map(\.method) == ["POST", "PUT", "PUT", "PUT", "POST"])
        #expect(requests[1...3].map { $0.upload?.length } == [5 << 20, 5 << 20, 2 << 20])
        #expect(String(decoding: requests[4].body ?? Data(), as: UTF8.self).contains("<PartNumber>3</PartNumber><ETag>&quot;tag&quot;</ETag>"))

        // A part that keeps failing: the upload is aborted
        let failing = StubLoader.sequence([(200, created), (400, "<Error><Code>InvalidPart</Code></Error>"), (204, "")])
        let broken = S3Client(location: s3.location, configuration: s3.configuration, loader: failing)
        await #expect(throws: ObjectStoreError.self) { try await broken.put(file: file, key: "ds/00000.tar", contentType: "application/x-tar") }
        #expect(failing.recorded.last?.method == "DELETE" && failing.recorded.last?.url.query == "uploadId=U1")
    }

    @Test func theEnvironmentNamesWhatIsMissing() {
        #expect(throws: ObjectStoreError.self) { try S3Configuration.fromEnvironment(["AWS_SECRET_ACCESS_KEY": "s"]) }
        do {
            _ = try S3Configuration.fromEnvironment(["AWS_ACCESS_KEY_ID": "k"])
        } catch {
            #expect(error.description.hasPrefix("AWS_SECRET_ACCESS_KEY is not set"))
        }
        let settings = try? S3Configuration.fromEnvironment([
            "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "ap-south-1",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:5000", "MIRROR_S3_PART_SIZE": "8388608",
        ])
        #expect(settings?.region == "ap-south-1" && settings?.partSize == 8 << 20 && settings?.endpoint?.port == 5000)
        #expect(throws: ObjectStoreError.self) {
            try S3Configuration.fromEnvironment(["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "MIRROR_S3_PART_SIZE": "1024"])
        }
    }
}
