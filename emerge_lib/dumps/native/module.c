/* emerge_lib.dumps._native: the C accelerators of reading a dump, each a pure accelerator
 * of a Python function that stays the specification (and is used where no C compiler
 * exists; the tests compare the two):
 *
 *   unescape.c         XML text unescaping               (dumps.xml.escape._unescape_py)
 *   revision_fields.c  spans and strict field readers shared by the two below
 *   entity_scan.c      Wikidata entity JSON read straight from the escaped text
 *   claims.c           a claims group to Statements, and the EntityScanner type
 *                                                        (dumps.wikidata.EntityParser)
 *   revisions.c        the batch of canonical <revision> elements, each entity scanned
 *                      in place                          (dumps.xml.revision)
 *
 * The parts are one translation unit (included below, in this order), not separately
 * compiled objects: the per-byte loops of each part call helpers of the others, and a
 * single unit lets the compiler inline across them as it did when they were one file.
 * The 7z reader's CRC32 is a module of its own (crc32.c, emerge_lib.dumps._crc32).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

#include "unescape.c"
#include "revision_fields.c"
#include "entity_scan.c"
#include "claims.c"
#include "revisions.c"

static PyMethodDef methods[] = {
    {"unescape", (PyCFunction)(void (*)(void))unescape, METH_FASTCALL,
     "unescape(data, start=0, end=len(data)) -> bytes\n\n"
     "Undo XML escaping of data[start:end]: the five named entities, numeric references "
     "and end-of-line normalization."},
    {"canonical_revisions", (PyCFunction)(void (*)(void))canonical_revisions, METH_FASTCALL,
     "canonical_revisions(buf, pos, page_id, text_bytes, Revision) -> (list, pos)\n\n"
     "The consecutive canonical revisions from pos (dumps.xml.revision._parse_canonical_revision "
     "for each, which stays the specification) and the offset after the last."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "The C accelerators of reading a dump: unescape, canonical_revisions, EntityScanner.",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    if (PyType_Ready(&EntityScannerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "EntityScanner", (PyObject *)&EntityScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
