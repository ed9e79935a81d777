// Typed wrappers for libcurl's variadic calls, which Swift cannot import
// (`'curl_easy_setopt' is unavailable: Variadic function is unavailable`).
// One wrapper per argument type; callback setters name their option, so each keeps its real C type.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>
#include <pthread.h>

// MARK: easy handle options

static inline CURLcode ccurl_easy_setopt_long(CURL *_Nonnull handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_off_t(CURL *_Nonnull handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_string(CURL *_Nonnull handle, CURLoption option, const char *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *_Nonnull handle, CURLoption option, void *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_slist(CURL *_Nonnull handle, CURLoption option, struct curl_slist *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*ccurl_data_callback)(char *_Nonnull data, size_t size, size_t count, void *_Nullable context);
typedef int (*ccurl_xferinfo_callback)(void *_Nullable context, curl_off_t dltotal, curl_off_t dlnow,
                                       curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode ccurl_easy_set_write_function(CURL *_Nonnull handle, ccurl_data_callback _Nullable callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode ccurl_easy_set_header_function(CURL *_Nonnull handle, ccurl_data_callback _Nullable callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode ccurl_easy_set_read_function(CURL *_Nonnull handle, ccurl_data_callback _Nullable callback) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback);
}

static inline CURLcode ccurl_easy_set_xferinfo_function(CURL *_Nonnull handle, ccurl_xferinfo_callback _Nullable callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

// MARK: easy handle information

static inline CURLcode ccurl_easy_getinfo_long(CURL *_Nonnull handle, CURLINFO info, long *_Nonnull value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_off_t(CURL *_Nonnull handle, CURLINFO info, curl_off_t *_Nonnull value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_string(CURL *_Nonnull handle, CURLINFO info, char *_Nullable *_Nonnull value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_pointer(CURL *_Nonnull handle, CURLINFO info, void *_Nullable *_Nonnull value) {
    return curl_easy_getinfo(handle, info, value);
}

// MARK: multi handle options

static inline CURLMcode ccurl_multi_setopt_long(CURLM *_Nonnull multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

// MARK: share handles

// A share handle's locks: one mutex per curl_lock_data kind, in an array of CURL_LOCK_DATA_LAST the caller allocates
// and passes as the share's user data (a header cannot hold a static array: the importer emits functions, not data).
static inline void ccurl_share_lock(CURL *_Nullable handle, curl_lock_data data, curl_lock_access access, void *_Nullable locks) {
    (void)handle;
    (void)access;
    pthread_mutex_lock((pthread_mutex_t *)locks + data);
}

static inline void ccurl_share_unlock(CURL *_Nullable handle, curl_lock_data data, void *_Nullable locks) {
    (void)handle;
    pthread_mutex_unlock((pthread_mutex_t *)locks + data);
}

static inline int ccurl_share_lock_count(void) { return CURL_LOCK_DATA_LAST; }

/// Makes `share` share `data` between its easy handles, under the mutexes of `locks` (ccurl_share_lock_count of them,
/// initialised). Returns the first error.
static inline CURLSHcode ccurl_share_setup(CURLSH *_Nonnull share, pthread_mutex_t *_Nonnull locks, curl_lock_data data) {
    CURLSHcode code = curl_share_setopt(share, CURLSHOPT_LOCKFUNC, ccurl_share_lock);
    if (code == CURLSHE_OK) code = curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, ccurl_share_unlock);
    if (code == CURLSHE_OK) code = curl_share_setopt(share, CURLSHOPT_USERDATA, (void *)locks);
    if (code == CURLSHE_OK) code = curl_share_setopt(share, CURLSHOPT_SHARE, data);
    return code;
}

// MARK: constants that are macros aliasing enum values, which Swift does not import

static inline CURLversion ccurl_version_now(void) { return CURLVERSION_NOW; }

#endif
