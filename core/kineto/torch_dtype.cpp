#include "kineto/torch_dtype.h"

namespace shardscope::kineto {

int dtypeBytes(std::string_view dtype) {
  if (dtype.rfind("c10::", 0) == 0) dtype.remove_prefix(5);
  if (dtype == "Float" || dtype == "float" || dtype == "Int" || dtype == "int" || dtype == "UInt32" ||
      dtype == "ComplexHalf")
    return 4;
  if (dtype == "Double" || dtype == "double" || dtype == "Long" || dtype == "long" || dtype == "int64" ||
      dtype == "UInt64" || dtype == "ComplexFloat" || dtype == "long int" || dtype == "int64_t")
    return 8;
  if (dtype == "Half" || dtype == "half" || dtype == "BFloat16" || dtype == "Short" || dtype == "UInt16" ||
      dtype == "short int")
    return 2;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype == "QInt8" || dtype == "QUInt8" ||
      dtype.rfind("Float8", 0) == 0 || dtype == "bool" || dtype == "signed char" || dtype == "unsigned char")
    return 1;
  if (dtype == "ComplexDouble") return 16;
  return -1;
}

}  // namespace shardscope::kineto
