// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_ALGORITHM_TABLE_H_
#define ACCELCRYPT_PROVIDER_ALGORITHM_TABLE_H_

#include <openssl/core.h>

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/algorithms.h"
#include "provider/provider_ctx.h"

namespace accelcrypt::provider {

// kMaxAlgorithms is the identity table's size, for the per-algorithm
// dispatch tables. OpenSSL's newctx, get_params and one-shot digest calls
// carry no algorithm argument, so each algorithm needs its own function
// addresses: they are template instances over the row's index in
// AllAlgorithms(), generated here instead of written out per algorithm.
// Exactly as many as there are rows: every table is relocated when the
// provider is loaded (a page fault per page of tables in every process),
// so none is made for a row that does not exist.
inline constexpr size_t kMaxAlgorithms = kNumAlgorithms;

// The property string of every algorithm we publish. The provider never
// sets default properties itself; users prefer it with
// `default_properties = ?provider=accelcrypt`.
inline constexpr char kProperties[] = "provider=accelcrypt";

// DispatchTables returns, for I in [0, kMaxAlgorithms), the address of
// Table<I>::kDispatch, a NULL-terminated OSSL_DISPATCH array.
template <template <size_t> class Table, size_t... I>
constexpr std::array<const OSSL_DISPATCH*, sizeof...(I)> DispatchTablesImpl(
    std::index_sequence<I...>) {
  return {Table<I>::kDispatch...};
}

template <template <size_t> class Table>
constexpr std::array<const OSSL_DISPATCH*, kMaxAlgorithms> DispatchTables() {
  return DispatchTablesImpl<Table>(std::make_index_sequence<kMaxAlgorithms>());
}

// AppendRoutedAlgorithms publishes every row of `family` the router says
// to offer (Router::Interposes: a backend that wins serves it, or
// `interpose = all`), each with its own dispatch table from `tables`
// (DispatchTables). What it leaves out OpenSSL's default provider serves.
// kInternal when a row lies beyond kMaxAlgorithms.
inline absl::Status AppendRoutedAlgorithms(
    ProvCtx& ctx, Family family,
    const std::array<const OSSL_DISPATCH*, kMaxAlgorithms>& tables,
    const char* description, std::vector<OSSL_ALGORITHM>* out) {
  for (const AlgorithmInfo& info : AllAlgorithms()) {
    if (info.family != family) continue;
    if (info.index >= tables.size()) {
      return absl::InternalError(
          absl::StrFormat("identity table row %u (%s) beyond kMaxAlgorithms",
                          info.index, info.name));
    }
    if (!ctx.core().router().Interposes(info.id).offered) continue;
    // openssl_names are string literals: NUL-terminated.
    out->push_back(OSSL_ALGORITHM{info.openssl_names.data(), kProperties,
                                  tables[info.index], description});
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_ALGORITHM_TABLE_H_
