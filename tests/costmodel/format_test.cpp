// The text forms of numbers every table uses (format.h), against literals.
#include "splitsim/costmodel/format.h"

#include <gtest/gtest.h>

namespace splitsim {
namespace {

TEST(FormatTest, ShapeInBrackets) {
  EXPECT_EQ(format_shape({64, 32, 112, 112}), "[64,32,112,112]");
  EXPECT_EQ(format_shape({}), "[]");
}

TEST(FormatTest, SiPrefixesTwoDecimalsAboveAThousand) {
  EXPECT_EQ(format_si(0), "0");
  EXPECT_EQ(format_si(999), "999");
  EXPECT_EQ(format_si(1000), "1.00k");
  EXPECT_EQ(format_si(1234567), "1.23M");
  EXPECT_EQ(format_si(2.5e18), "2500.00P");
  EXPECT_EQ(format_si(12, "B", " "), "12 B");
  EXPECT_EQ(format_si(1234567, "B", " "), "1.23 MB");
  EXPECT_EQ(format_si(3e9, "", " "), "3.00 G");
}

TEST(FormatTest, SiWithSignificantDigits) {
  EXPECT_EQ(format_si_digits(1234567, 4), "1.235M");
  EXPECT_EQ(format_si_digits(0.5, 4), "0.5");
  EXPECT_EQ(format_si_digits(-2500, 4), "-2.5k");
  EXPECT_EQ(format_si_digits(2.5e8, 4), "250M");
}

TEST(FormatTest, SecondsInSMsOrUs) {
  EXPECT_EQ(format_seconds(1.5), "1.500 s");
  EXPECT_EQ(format_seconds(0.0123), "12.300 ms");
  EXPECT_EQ(format_seconds(0.0000042), "4.2 us");
  EXPECT_EQ(format_seconds(0), "0.0 us");
}

TEST(FormatTest, Percentages) {
  EXPECT_EQ(format_percent(0.256), "26%");
  EXPECT_EQ(format_percent(0.256, 2), "25.60%");
  EXPECT_EQ(format_signed_percent(0.256), "+25.6%");
  EXPECT_EQ(format_signed_percent(-0.004), "-0.4%");
  EXPECT_EQ(format_signed_percent(0.5, 0), "+50%");
}

TEST(FormatTest, NumberAsPercentG) {
  EXPECT_EQ(format_number(2e8), "2e+08");
  EXPECT_EQ(format_number(0.25), "0.25");
  EXPECT_EQ(format_number(100), "100");
}

}  // namespace
}  // namespace splitsim
