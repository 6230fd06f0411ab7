// The file tables of .debug_line headers (DWARF 2-5): a reader of the line
// program header's directory and file entries, without the rows, so the
// constructor can name every in-scope file and mark CUs that cannot hold an
// in-scope row without decoding any line program. Called by
// Impl::read_object (object_scan.cpp) once per CU; file_path also by
// Impl::load (line_lookup.cpp). Pure functions of the section bytes.
#include "detail/symbolizer_impl.hpp"

namespace coact::causal {

namespace {

// ---- the file tables of .debug_line headers (DWARF 2-5, DWARF spec 6.2.4) ----

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
  uint64_t fixed(size_t n) {
    if (static_cast<size_t>(end - p) < n) {
      ok = false;
      p = end;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);  // little-endian (x86-64)
    p += n;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; p < end; shift += 7) {
      const uint8_t b = *p++;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  const char* cstr() {
    const uint8_t* z = static_cast<const uint8_t*>(std::memchr(p, 0, static_cast<size_t>(end - p)));
    if (z == nullptr) {
      ok = false;
      p = end;
      return "";
    }
    const char* s = reinterpret_cast<const char*>(p);
    p = z + 1;
    return s;
  }
  void skip(uint64_t n) {
    if (static_cast<uint64_t>(end - p) < n) {
      ok = false;
      p = end;
    } else {
      p += n;
    }
  }
};

// A string at `off` of a string section (nullopt if outside it).
std::optional<const char*> string_at(const Section& s, uint64_t off) {
  if (s.data == nullptr || off >= s.size || std::memchr(s.data + off, 0, s.size - off) == nullptr) return std::nullopt;
  return reinterpret_cast<const char*>(s.data + off);
}

// One attribute of a DWARF 5 directory or file entry: its string (paths) or
// number (directory index); false for a form this reader does not know.
bool read_form(Reader& r, uint64_t form, size_t offset_size, const DebugSections& secs, const char*& str,
               uint64_t& num) {
  switch (form) {
    case DW_FORM_string:
      str = r.cstr();
      return r.ok;
    case DW_FORM_line_strp:
    case DW_FORM_strp: {
      const auto s = string_at(form == DW_FORM_strp ? secs.str : secs.line_str, r.fixed(offset_size));
      if (!s) return false;
      str = *s;
      return r.ok;
    }
    case DW_FORM_udata:
      num = r.uleb();
      return r.ok;
    case DW_FORM_data1:
      num = r.fixed(1);
      return r.ok;
    case DW_FORM_data2:
      num = r.fixed(2);
      return r.ok;
    case DW_FORM_data4:
      num = r.fixed(4);
      return r.ok;
    case DW_FORM_data8:
      num = r.fixed(8);
      return r.ok;
    case DW_FORM_data16:
      r.skip(16);
      return r.ok;
    case DW_FORM_block:
      r.skip(r.uleb());
      return r.ok;
    default:
      return false;
  }
}

// A file's path as the symbolizer names it: joined with its directory (as
// libdw's dwarf_linesrc), then with the CU's compilation directory if still
// relative, lexically normalised.
std::string file_path(const char* dir, const char* name, const char* comp_dir) {
  if (name == nullptr) return "?";
  if (*name == '\0') {  // (no producer writes one) as the path operations would
    std::filesystem::path q = dir != nullptr ? std::filesystem::path(dir) : std::filesystem::path();
    if (q.is_relative() && comp_dir != nullptr) q = std::filesystem::path(comp_dir) / q;
    return q.lexically_normal().string();
  }
  // Joined as strings, lexically normalised only where a "." or ".."
  // component or an empty one ("//", a trailing '/') is in the path: the
  // filesystem::path operations were three quarters of reading every
  // header's file table (33 of 45 M instructions for the archiver).
  std::string p = name;
  if (p.front() != '/' && dir != nullptr && *dir != '\0') p = std::string(dir) + "/" + p;
  if (p.front() != '/' && comp_dir != nullptr && *comp_dir != '\0') p = std::string(comp_dir) + "/" + p;
  bool clean = p.back() != '/';
  for (size_t i = 0; clean && i < p.size(); ++i) {
    if (p[i] != '/' && i != 0) continue;
    const size_t start = p[i] == '/' ? i + 1 : i;  // a component starts here
    const size_t end = std::min(p.find('/', start), p.size());
    const std::string_view c(p.data() + start, end - start);
    clean = !(c.empty() && end < p.size()) && c != "." && c != "..";
  }
  return clean ? p : std::filesystem::path(p).lexically_normal().string();
}

// Appends the paths of the file table of the line program at `off` (the
// CU's DW_AT_stmt_list) to `out`, but for pseudo-files ("<built-in>": no
// row names one, and joined with a directory it would look like a source). False if the header is malformed or uses
// a form this reader does not know (the caller then reads every CU's rows).
bool header_files(const DebugSections& secs, uint64_t off, const char* comp_dir, std::vector<std::string>& out) {
  if (secs.line.data == nullptr || off >= secs.line.size) return false;
  Reader r{secs.line.data + off, secs.line.data + secs.line.size};
  size_t offset_size = 4;
  uint64_t length = r.fixed(4);
  if (length == 0xffffffffu) {
    offset_size = 8;
    length = r.fixed(8);
  }
  if (!r.ok || length > static_cast<uint64_t>(r.end - r.p)) return false;
  r.end = r.p + length;
  const uint64_t version = r.fixed(2);
  if (version < 2 || version > 5) return false;
  if (version >= 5) r.skip(2);  // address_size, segment_selector_size
  const uint64_t header_length = r.fixed(offset_size);
  if (!r.ok || header_length > static_cast<uint64_t>(r.end - r.p)) return false;
  r.end = r.p + header_length;  // the file table lies inside the header
  r.skip(
      version >= 4
          ? 5
          : 4);  // minimum_instruction_length, [maximum_operations_per_instruction], default_is_stmt, line_base, line_range
  const uint64_t opcode_base = r.fixed(1);
  r.skip(opcode_base > 0 ? opcode_base - 1 : 0);
  if (!r.ok) return false;
  std::vector<const char*> dirs;
  if (version < 5) {
    dirs.push_back(comp_dir);  // directory 0: the compilation directory
    for (;;) {
      const char* d = r.cstr();
      if (!r.ok) return false;
      if (*d == '\0') break;
      dirs.push_back(d);
    }
    for (;;) {
      const char* name = r.cstr();
      if (!r.ok) return false;
      if (*name == '\0') break;
      const uint64_t dir = r.uleb();
      (void)r.uleb();  // modification time
      (void)r.uleb();  // length
      if (!r.ok) return false;
      if (*name != '<') out.push_back(file_path(dir < dirs.size() ? dirs[dir] : nullptr, name, comp_dir));
    }
    return true;
  }
  // DWARF 5: entry formats, then entries, for directories and then files.
  auto entries = [&](bool files) {
    std::vector<std::pair<uint64_t, uint64_t>> format(r.fixed(1));
    for (auto& [type, form] : format) {
      type = r.uleb();
      form = r.uleb();
    }
    const uint64_t count = r.uleb();
    if (!r.ok) return false;
    for (uint64_t i = 0; i < count; ++i) {
      const char* path = nullptr;
      uint64_t dir = 0;
      for (const auto& [type, form] : format) {
        const char* str = nullptr;
        uint64_t num = 0;
        if (!read_form(r, form, offset_size, secs, str, num)) return false;
        if (type == DW_LNCT_path) path = str;
        if (type == DW_LNCT_directory_index) dir = num;
      }
      if (!files) {
        dirs.push_back(path);
      } else if (path == nullptr || *path != '<') {
        out.push_back(file_path(dir < dirs.size() ? dirs[dir] : nullptr, path, comp_dir));
      }
    }
    return r.ok;
  };
  return entries(false) && entries(true);
}

// A debug section's bytes (decompressed), or empty.
Section section_named(Elf* elf, const char* wanted) {
  size_t shstrndx = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) return {};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name == nullptr || std::strcmp(name, wanted) != 0) continue;
    if ((shdr.sh_flags & SHF_COMPRESSED) != 0 && elf_compress(scn, 0, 0) < 0) return {};
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) return {};
    return Section{static_cast<const uint8_t*>(d->d_buf), d->d_size};
  }
  return {};
}

}  // namespace

}  // namespace coact::causal
